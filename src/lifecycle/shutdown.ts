import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from '../logging/log.js';
import { writeGate } from '../registry/write-gate.js';

// Orderly stop on SIGTERM/SIGINT: no new clients, writes already sent to a
// slave finish and are answered, then the APIs and the buses close, all
// within a bound so a stuck peer cannot keep a supervisor waiting.

/** systemd waits 90 s by default; 5 s is ample for a Modbus write and its reply. */
export const SHUTDOWN_BOUND_MS = 5000;

/** How often idle keep-alive connections are closed while waiting for busy ones to finish. */
const IDLE_SWEEP_MS = 50;

export interface ShutdownStep {
  /** For the log when the step fails. */
  name: string;
  run(): Promise<void> | void;
}

/**
 * `steps` run in order after in-flight writes settled: close WebSocket
 * clients, disconnect MQTT, stop the runtime (which flushes aliases).
 * Resolves when everything closed or the bound ran out; never rejects.
 */
export interface HttpFront {
  server: Server;
  /** Resolves once the listeners no longer accept connections. */
  stopAccepting: Promise<void>;
  /** The open connections the listeners handed to the server; shrinks as they close. */
  connections: ReadonlySet<Socket>;
}

export async function shutDown({ server, stopAccepting, connections }: HttpFront, steps: readonly ShutdownStep[], log: Logger, boundMs = SHUTDOWN_BOUND_MS): Promise<void> {
  const deadline = performance.now() + boundMs;
  const remaining = () => Math.max(0, deadline - performance.now());

  server.closeIdleConnections();
  const serverClosed = stopAccepting.then(() => allClosed(connections));

  if (!(await writeGate.drain(remaining()))) log.warn(`shutdown: ${writeGate.inFlight} write(s) still unconfirmed, not waiting longer`);

  for (const step of steps) {
    try {
      await withinBound(Promise.resolve(step.run()), remaining());
    } catch (error) {
      log.warn(`shutdown: ${step.name}: ${(error as Error).message}`);
    }
  }

  // Replies to the writes above have been handed to their sockets by now;
  // a connection counts as idle only once its reply was flushed.
  const sweep = setInterval(() => server.closeIdleConnections(), IDLE_SWEEP_MS);
  try {
    await withinBound(serverClosed, remaining()).catch(() => undefined);
  } finally {
    clearInterval(sweep);
    server.closeAllConnections();
  }
}

function allClosed(connections: ReadonlySet<Socket>): Promise<void> {
  return new Promise((resolve) => {
    const check = () => {
      if (connections.size === 0) return resolve();
      const [first] = connections;
      first!.once('close', () => setImmediate(check));
    };
    check();
  });
}

function withinBound<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`did not finish within the shutdown bound`)), ms)));
  return Promise.race([work, expired]).finally(() => clearTimeout(timer));
}
