import type { Socket } from 'node:net';
import { ConnectionBridge } from './connection-bridge.js';

// The parking lot: where connections wait that arrive from an address already
// holding all its HTTP slots (admission.ts), and that no junk of that address
// could make room for. Typically a client, or many, holding thousands of
// idle keep-alive connections, and any well-behaved client that shares its
// address (on loopback: every local client).
//
// Such a newcomer cannot be told apart from the others by anything it does,
// so each is served, and made cheap to keep instead: a parked socket has one
// listener and its own few fields (about 1.5 KB with the kernel's socket,
// against about 5.5 KB for an idle HTTP connection). When a complete request
// head has arrived, a ConnectionBridge takes it into HTTP for as long as the
// request lasts; between requests the socket is parked again. The answered
// socket stays open, as its client wants, so it does not reconnect: closing
// idle connections is what made a flood of them costly, since each close
// came back at once as a new connection to accept, parse and answer.
//
// Everything is bounded: parked sockets (per pool, each its share of the
// total), bytes of incomplete heads, and bridges open at once (a complete head
// waits, unread, for one). A head that has not completed within HEAD_GRACE_MS
// is junk and its socket is closed; an idle parked socket is closed after
// PARKED_IDLE_MS, plus up to as much again (so reconnects do not come in waves).
//
// A parked socket's errors are heard by the listener admission gave it at
// accept (socket-errors.ts), which stays when the socket leaves the lot as a
// WebSocket.

/** A client sends its request head within milliseconds; a parked one trickling it is closed. */
export const HEAD_GRACE_MS = 500;
/** How long an idle parked socket is kept: this, plus up to as much again. */
const PARKED_IDLE_MS = 30_000;
/** A request head larger than this on a parked socket is refused (node:http's own default limit). */
const MAX_HEAD_BYTES = 16 * 1024;
/** Bytes of incomplete heads held over all parked sockets. */
const PENDING_BYTES_CAP = 1024 * 1024;
/** Parked connections at most, as a multiple of max_connections (256 → 16,384; about 25 MB). */
export const PARKED_PER_CONNECTION = 64;
/** Bridges open at once: requests from parked sockets being read or answered. */
export const BRIDGES_CAP = 64;

type Pool = 'loopback' | 'remote';
const HEAD_END = Buffer.from('\r\n\r\n');

interface Parked {
  socket: Socket;
  pool: Pool;
  /** The start of a request head, until it is complete. */
  pending?: Buffer;
  /** When the head in `pending` (or begun on the bridge) started. */
  headSince: number;
  bridge?: ConnectionBridge;
  /** Complete head received, waiting for a bridge. */
  waiting: boolean;
  /** When an idle parked socket is let go. */
  idleUntil: number;
  /** Nothing received yet: a socket that sends nothing within HEAD_GRACE_MS is closed. */
  fresh: boolean;
  /** Left the lot as a WebSocket. */
  upgraded: boolean;
}

export interface ParkingStats {
  /** Sockets in the lot now, and parked so far. */
  parked: number;
  parkedTotal: number;
  /** Requests of parked sockets carried into HTTP. */
  requests: number;
  /** Parked sockets closed: heads that never completed, idle ones past their time, and ones evicted for a newcomer. */
  closedJunk: number;
  closedIdle: number;
  evicted: number;
}

export class ParkingLot {
  readonly stats: ParkingStats = { parked: 0, parkedTotal: 0, requests: 0, closedJunk: 0, closedIdle: 0, evicted: 0 };
  /** Per pool, in the order each last became idle: the first is the one idle longest. */
  private readonly pools: Record<Pool, Map<Socket, Parked>> = { loopback: new Map(), remote: new Map() };
  private readonly byBridge = new Map<ConnectionBridge, Parked>();
  private readonly queue: Parked[] = [];
  private pendingBytes = 0;
  private sweeper: NodeJS.Timeout | undefined;
  private readonly poolCap: number;
  // One listener of each kind for every parked socket (each is called with the socket as `this`): per-socket closures would cost more than the entry.
  private readonly onData: (this: Socket, chunk: Buffer) => void;
  private readonly onEnd: (this: Socket) => void;
  private readonly onClose: (this: Socket) => void;

  /** `serve` hands a bridge to HTTP as a new connection. */
  constructor(
    maxConnections: number,
    private readonly serve: (bridge: ConnectionBridge) => void,
  ) {
    this.poolCap = Math.max(1, Math.floor((maxConnections * PARKED_PER_CONNECTION * 3) / 4));
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const lot = this;
    this.onData = function (chunk) {
      const entry = lot.entryOf(this);
      if (entry) lot.received(entry, chunk);
    };
    this.onEnd = function () {
      const entry = lot.entryOf(this);
      if (entry?.bridge) entry.bridge.endInput();
      else this.destroy();
    };
    this.onClose = function () {
      const entry = lot.entryOf(this);
      if (entry) lot.forget(entry);
    };
  }

  private entryOf(socket: Socket): Parked | undefined {
    return this.pools.loopback.get(socket) ?? this.pools.remote.get(socket);
  }

  /** Parks `socket`; false when its pool's share of the lot is full. */
  park(socket: Socket, pool: Pool): boolean {
    const lot = this.pools[pool];
    if (lot.size >= this.poolCap) return false;
    const entry: Parked = {
      socket,
      pool,
      headSince: performance.now(),
      waiting: false,
      idleUntil: this.idleDeadline(),
      fresh: true,
      upgraded: false,
    };
    lot.set(socket, entry);
    socket.on('data', this.onData);
    socket.on('end', this.onEnd);
    socket.on('close', this.onClose);
    this.stats.parked++;
    this.stats.parkedTotal++;
    if (!this.sweeper) this.sweeper = setInterval(() => this.sweep(), HEAD_GRACE_MS).unref();
    return true;
  }

  /** Closes the parked socket of `pool` idle longest, to make room; false when none is idle. */
  evictIdle(pool: Pool): boolean {
    for (const entry of this.pools[pool].values()) {
      if (entry.bridge || entry.pending || entry.waiting) continue;
      this.stats.evicted++;
      this.forget(entry);
      entry.socket.destroy();
      return true;
    }
    return false;
  }

  /** Whether `socket` is a bridge of this lot. */
  static isBridge(socket: unknown): socket is ConnectionBridge {
    return socket instanceof ConnectionBridge;
  }

  /** A request whose head HTTP parsed on `bridge`; requestFinished follows when its reply is done or abandoned. */
  requestStarted(bridge: ConnectionBridge): void {
    bridge.inFlight++;
    bridge.begun = false;
    this.stats.requests++;
  }

  requestFinished(bridge: ConnectionBridge): void {
    bridge.inFlight--;
    const entry = this.byBridge.get(bridge);
    if (!entry) return;
    entry.headSince = performance.now();
    // Let HTTP finish its own bookkeeping of the reply first.
    setImmediate(() => this.detachIfIdle(bridge));
  }

  /**
   * A WebSocket upgrade on a bridge: the socket leaves the lot for good and is
   * returned for the WebSocket (HTTP has already let go of the bridge).
   */
  takeOver(bridge: ConnectionBridge): Socket {
    const entry = this.byBridge.get(bridge);
    const socket = bridge.socket;
    if (!entry) return socket;
    socket.pause();
    this.pools[entry.pool].delete(socket);
    this.stats.parked--;
    socket.removeListener('data', this.onData);
    socket.removeListener('end', this.onEnd);
    socket.removeListener('close', this.onClose);
    entry.upgraded = true;
    bridge.detach();
    bridge.destroy();
    // As node:http leaves an upgraded socket: flowing again once the WebSocket listens.
    (socket as unknown as { readableFlowing: boolean | null }).readableFlowing = null;
    return socket;
  }

  /** Lets every parked socket go (shutdown). */
  closeAll(): void {
    for (const lot of Object.values(this.pools)) for (const entry of [...lot.values()]) entry.socket.destroy();
  }

  private idleDeadline(): number {
    return performance.now() + PARKED_IDLE_MS * (1 + Math.random());
  }

  private received(entry: Parked, chunk: Buffer): void {
    entry.fresh = false;
    if (entry.bridge) {
      if (!entry.bridge.begun && entry.bridge.inFlight === 0) entry.headSince = performance.now();
      entry.bridge.deliver(chunk);
      return;
    }
    if (!entry.pending) entry.headSince = performance.now();
    const before = entry.pending?.length ?? 0;
    const pending = entry.pending ? Buffer.concat([entry.pending, chunk]) : chunk;
    if (pending.length > MAX_HEAD_BYTES && pending.indexOf(HEAD_END) < 0) {
      this.stats.closedJunk++;
      entry.socket.destroy();
      return;
    }
    if (this.pendingBytes + pending.length - before > PENDING_BYTES_CAP) {
      this.stats.closedJunk++;
      entry.socket.destroy();
      return;
    }
    this.pendingBytes += pending.length - before;
    entry.pending = pending;
    if (pending.indexOf(HEAD_END) >= 0) this.bridge(entry);
  }

  /** A complete head: into HTTP through a bridge, or into the queue for one. */
  private bridge(entry: Parked): void {
    if (this.byBridge.size >= BRIDGES_CAP) {
      if (!entry.waiting) {
        entry.waiting = true;
        entry.socket.pause();
        this.queue.push(entry);
      }
      return;
    }
    entry.waiting = false;
    const pending = entry.pending!;
    entry.pending = undefined;
    this.pendingBytes -= pending.length;
    // In use: no longer a candidate for eviction as idle.
    const lot = this.pools[entry.pool];
    lot.delete(entry.socket);
    lot.set(entry.socket, entry);
    const bridge = new ConnectionBridge(entry.socket, (closed, kept) => this.bridgeClosed(closed, kept));
    entry.bridge = bridge;
    this.byBridge.set(bridge, entry);
    this.serve(bridge);
    entry.socket.resume();
    bridge.deliver(pending);
  }

  private detachIfIdle(bridge: ConnectionBridge): void {
    // A next request has begun on the bridge: its head completes there, or the sweep closes it.
    if (bridge.inFlight > 0 || bridge.begun || bridge.destroyed || bridge.writableEnded) return;
    bridge.detach();
  }

  private bridgeClosed(bridge: ConnectionBridge, socketKept: boolean): void {
    const entry = this.byBridge.get(bridge);
    if (!entry) return;
    this.byBridge.delete(bridge);
    entry.bridge = undefined;
    if (socketKept && !entry.upgraded) {
      // Idle again: the youngest idle socket of its pool.
      entry.idleUntil = this.idleDeadline();
      const lot = this.pools[entry.pool];
      lot.delete(entry.socket);
      lot.set(entry.socket, entry);
    }
    this.next();
  }

  /** A bridge is free: the head that has waited longest goes next. */
  private next(): void {
    while (this.queue.length > 0 && this.byBridge.size < BRIDGES_CAP) {
      const entry = this.queue.shift()!;
      if (entry.socket.destroyed || !entry.waiting) continue;
      this.bridge(entry);
    }
  }

  private forget(entry: Parked): void {
    if (this.pools[entry.pool].delete(entry.socket)) this.stats.parked--;
    if (entry.pending) this.pendingBytes -= entry.pending.length;
    entry.pending = undefined;
    entry.waiting = false;
    entry.bridge?.destroy();
    if (this.stats.parked === 0 && this.sweeper) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
    }
  }

  private sweep(): void {
    const now = performance.now();
    for (const lot of Object.values(this.pools)) {
      for (const entry of lot.values()) {
        const headBegun = entry.fresh || entry.pending !== undefined || (entry.bridge !== undefined && entry.bridge.begun);
        if (headBegun && !entry.waiting && now - entry.headSince >= HEAD_GRACE_MS) {
          this.stats.closedJunk++;
          entry.socket.destroy();
        } else if (!entry.bridge && !entry.pending && !entry.waiting && now >= entry.idleUntil) {
          this.stats.closedIdle++;
          entry.socket.destroy();
        }
      }
    }
  }
}
