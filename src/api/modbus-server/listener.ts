import { createServer, type Server, type Socket } from 'node:net';
import { GoneSignal } from '../../modbus/gone-signal.js';
import { MbapFramer, encodeMbap } from '../../modbus/tcp-framer.js';
import type { AllowList } from './allow-list.js';
import type { ClientContext } from './slave-gateway.js';
import type { ModbusServerStats } from './stats.js';
import { DEFAULT_MAX_REQUESTS_PER_SECOND, RequestPacer } from './request-pacer.js';

// The server's sockets and their bounds. A Modbus TCP client may pipeline
// requests; each connection's are answered one after another, in order, so
// one client holds at most one request in the server at a time and the rest
// waits in its own small queue. Requests are started at a bounded rate, a few
// per turn of the event loop, the connections taking turns (request-pacer.ts),
// so however many clients ask, polls, timers and the HTTP API keep theirs. Whatever a client does (garbage, a length
// that lies, one byte at a time, never reading its replies, hundreds of
// connections) costs only its own connection:
//  - a stream that is not MBAP closes the connection (TCP cannot resync);
//  - a frame not complete within FRAME_DEADLINE_MS closes it;
//  - more than MAX_QUEUED_FRAMES unanswered requests close it, and past
//    PAUSE_AT reading stops until it catches up (TCP flow control);
//  - replies not read beyond MAX_UNSENT_BYTES close it;
//  - no request for IDLE_MS closes it;
//  - connections beyond MAX_CONNECTIONS, or MAX_CONNECTIONS_PER_ADDRESS from
//    one address, are refused.

export const MAX_CONNECTIONS = 64;
export const MAX_CONNECTIONS_PER_ADDRESS = 16;
export const MAX_QUEUED_FRAMES = 32;
const PAUSE_AT = 8;
export const MAX_UNSENT_BYTES = 64 * 1024;
export const FRAME_DEADLINE_MS = 5_000;
const IDLE_MS = 300_000;

export type Handler = (unit: number, pdu: Buffer, client: ClientContext) => Promise<Buffer>;

export interface ListenerLog {
  info(message: string): void;
  warn(message: string): void;
  debug(message: string): void;
}

export interface ModbusListener {
  readonly server: Server;
  readonly connections: number;
  /** Stops accepting, drops what waits, and closes every connection. */
  close(): Promise<void>;
}

export function modbusListener(
  handler: Handler,
  allow: AllowList | undefined,
  stats: ModbusServerStats,
  log: ListenerLog,
  maxRequestsPerSecond = DEFAULT_MAX_REQUESTS_PER_SECOND,
): ModbusListener {
  const sockets = new Set<Socket>();
  const perAddress = new Map<string, number>();
  const closers = new Set<() => void>();
  const pacer = new RequestPacer(maxRequestsPerSecond);

  const server = createServer((socket) => {
    const address = socket.remoteAddress ?? 'unknown';
    if (allow && !allow.allows(socket.remoteAddress)) {
      stats.refusedConnections++;
      log.warn(`Modbus TCP: connection from ${address} refused: not in apis.modbus_server.allow`);
      socket.destroy();
      return;
    }
    const fromAddress = perAddress.get(address) ?? 0;
    if (sockets.size >= MAX_CONNECTIONS || fromAddress >= MAX_CONNECTIONS_PER_ADDRESS) {
      stats.refusedConnections++;
      log.debug(`Modbus TCP: connection from ${address} refused: ${sockets.size} connections open, ${fromAddress} from this address`);
      socket.destroy();
      return;
    }
    sockets.add(socket);
    perAddress.set(address, fromAddress + 1);
    stats.connections++;
    serveConnection(socket, address, handler, stats, log, closers, pacer);
    socket.once('close', () => {
      sockets.delete(socket);
      const left = (perAddress.get(address) ?? 1) - 1;
      if (left > 0) perAddress.set(address, left);
      else perAddress.delete(address);
    });
  });
  server.on('error', (error) => log.warn(`Modbus TCP: ${error.message}`));

  return {
    server,
    get connections() {
      return sockets.size;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const close of closers) close();
        pacer.stop();
      }),
  };
}

function serveConnection(
  socket: Socket,
  address: string,
  handler: Handler,
  stats: ModbusServerStats,
  log: ListenerLog,
  closers: Set<() => void>,
  pacer: RequestPacer,
): void {
  socket.setNoDelay(true);
  socket.setTimeout(IDLE_MS);
  const gone = new GoneSignal();
  const client: ClientContext = { who: `modbus:${address}`, signal: gone };
  const queue: Array<{ transactionId: number; unit: number; pdu: Buffer }> = [];
  let serving = false;
  let frameTimer: NodeJS.Timeout | undefined;

  const drop = (why: string | undefined): void => {
    if (why !== undefined) {
      stats.protocolErrors++;
      log.debug(`Modbus TCP: ${client.who}: connection closed: ${why}`);
    }
    queue.length = 0;
    clearTimeout(frameTimer);
    gone.abort();
    socket.destroy();
  };
  // A reload or shutdown: what waits is dropped, the client sees an orderly close.
  const close = (): void => {
    queue.length = 0;
    clearTimeout(frameTimer);
    gone.abort();
    socket.end();
    // A client that does not close its side in time is cut off.
    setTimeout(() => socket.destroy(), 1_000).unref();
  };
  closers.add(close);

  // One request at a time, started when the pacer (request-pacer.ts) comes
  // to this connection; a connection with more waiting then queues again,
  // behind the others.
  let queued = false;
  const takeTurn = (): void => {
    if (queued || serving || queue.length === 0 || socket.destroyed) return;
    queued = true;
    pacer.enqueue(serveOne);
  };
  const serveOne = (): void => {
    queued = false;
    const request = queue.shift();
    if (request === undefined || socket.destroyed || gone.aborted) return;
    const { transactionId, unit, pdu } = request;
    if (queue.length < PAUSE_AT && socket.isPaused()) socket.resume();
    serving = true;
    void handler(unit, pdu, client).then((reply) => {
      serving = false;
      if (socket.destroyed || gone.aborted) return;
      socket.write(encodeMbap(transactionId, unit, reply));
      if (socket.writableLength > MAX_UNSENT_BYTES) return drop(`${socket.writableLength} bytes of replies not read`);
      takeTurn();
    });
  };

  const framer = new MbapFramer(
    (transactionId, unit, pdu) => {
      if (gone.aborted) return;
      clearTimeout(frameTimer);
      frameTimer = undefined;
      if (queue.length >= MAX_QUEUED_FRAMES) return drop(`more than ${MAX_QUEUED_FRAMES} requests unanswered`);
      queue.push({ transactionId, unit, pdu });
      if (queue.length >= PAUSE_AT) socket.pause();
      takeTurn();
    },
    (reason) => drop(reason),
  );
  socket.on('data', (chunk: Buffer) => {
    framer.push(chunk);
    // A partial frame has FRAME_DEADLINE_MS from its first byte to complete.
    if (framer.buffered === 0) {
      clearTimeout(frameTimer);
      frameTimer = undefined;
    } else if (frameTimer === undefined && !gone.aborted) {
      frameTimer = setTimeout(() => drop(`a frame did not complete within ${FRAME_DEADLINE_MS} ms`), FRAME_DEADLINE_MS);
    }
  });
  socket.on('timeout', () => drop(`no request for ${IDLE_MS / 1000} s`));
  socket.on('error', () => {
    // The client went away; 'close' cleans up.
  });
  socket.once('close', () => {
    closers.delete(close);
    pacer.remove(serveOne);
    clearTimeout(frameTimer);
    queue.length = 0;
    gone.abort();
  });
}
