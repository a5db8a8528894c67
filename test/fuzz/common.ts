import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { Random } from './random.js';

// What the attackers share: the target, the clock of the run, counters, and
// raw sockets that are always closed and never end the fuzzer with an error.

/** Source addresses of the attackers; the supervising client alone uses 127.0.0.1. */
export const ATTACKER_ADDRESSES = ['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5'];

/** Credentials in the daemon's configuration (config.ts). */
export const READ_TOKEN = 'fuzz-read-token';
export const WRITE_TOKEN = 'fuzz-write-token';
/** Used only by the fuzzer itself (the last reload of the storm), never by an attacker. */
export const ADMIN_TOKEN = 'fuzz-admin-token';
/** The panel user (login-attack.ts); the password must never appear in the daemon's output. */
export const LOGIN_USER = 'fuzzuser';
export const LOGIN_PASSWORD = 'fuzz-Pass-7f3c9e1d';

export type Counters = Record<string, number>;

export interface Target {
  port: number;
  /** True once the run is over (or has failed): workers finish their episode and stop. */
  stopped(): boolean;
  counts: Counters;
}

export function count(counts: Counters, name: string, by = 1): void {
  counts[name] = (counts[name] ?? 0) + by;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A TCP connection from `localAddress`; undefined when it could not be made. */
export function openSocket(port: number, localAddress: string, timeoutMs = 2000): Promise<Socket | undefined> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1', localAddress });
    // For the socket's whole life: the daemon may reset or close it at any moment.
    socket.on('error', () => undefined);
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(undefined);
    }, timeoutMs);
    socket.once('connect', () => {
      clearTimeout(timer);
      resolve(socket);
    });
    socket.once('close', () => {
      clearTimeout(timer);
      resolve(undefined);
    });
  });
}

/** An attacker's connection from one of its addresses, counted as `<name>.connections` (or `.connect_failures`). */
export async function attackerSocket(target: Target, rng: Random, name: string): Promise<Socket | undefined> {
  const socket = await openSocket(target.port, rng.pick(ATTACKER_ADDRESSES));
  count(target.counts, socket ? `${name}.connections` : `${name}.connect_failures`);
  // A daemon that does not accept now is not hammered in a tight loop.
  if (!socket) await sleep(20);
  return socket;
}

/** Resolves when `socket` closed, or after `ms`; the socket stays as it is. */
export function closedWithin(socket: Socket, ms: number): Promise<boolean> {
  if (socket.destroyed) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      socket.off('close', onClose);
      resolve(false);
    }, ms);
    const onClose = () => {
      clearTimeout(timer);
      resolve(true);
    };
    socket.once('close', onClose);
  });
}

/** How an episode lets go of its connection. */
export function letGo(socket: Socket, rng: Random): 'reset' | 'end' | 'destroy' {
  if (socket.destroyed) return 'destroy';
  const how = rng.pick(['reset', 'reset', 'end', 'destroy'] as const);
  if (how === 'reset') socket.resetAndDestroy();
  else if (how === 'end') {
    socket.end();
    // A peer that does not close its side in time is cut.
    setTimeout(() => socket.destroy(), 500).unref();
  } else socket.destroy();
  return how;
}

/**
 * `workers` loops of `episode`, each with its own random stream, until the
 * run stops. An episode must bound itself in time and close what it opened.
 */
export async function runWorkers(target: Target, rng: Random, name: string, workers: number, episode: (rng: Random, worker: number) => Promise<void>): Promise<void> {
  await Promise.all(
    Array.from({ length: workers }, async (_, index) => {
      const own = rng.fork(`${name}#${index}`);
      while (!target.stopped()) {
        try {
          await episode(own, index);
        } catch (error) {
          // The fuzzer's own bug: reported, never silent.
          count(target.counts, `${name}.fuzzer_errors`);
          process.stderr.write(`fuzz: ${name}: ${(error as Error).stack ?? String(error)}\n`);
          await sleep(100);
        }
      }
    }),
  );
}

export interface Peer {
  /** Listens on a free loopback port; resolves with it. */
  listen(): Promise<number>;
  /** No new connections, and the open ones cut. */
  close(): Promise<void>;
}

/** A TCP peer for the daemon to talk to; every socket has an error listener and is cut on close. */
export function tcpPeer(onConnection: (socket: Socket) => void): Peer {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
    onConnection(socket);
  });
  server.on('error', (error) => process.stderr.write(`fuzz: peer: ${error.message}\n`));
  return {
    listen: () =>
      new Promise((resolve) => {
        server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port));
      }),
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
  };
}
