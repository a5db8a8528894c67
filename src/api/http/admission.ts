import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { isLoopbackAddress } from '../access/loopback.js';

// Admission, before any request is parsed or any credential looked at. Node's
// own `maxConnections` refuses the newest connection once the cap is reached,
// so a thousand sockets trickling their headers, or ten thousand idle
// keep-alives, lock every real client out. Here the cap is kept by letting
// go of the connections that are worth least instead:
//
// 1. a connection that has been waiting for a complete request head for more
//    than HEAD_GRACE_MS (trickling headers, or idle between keep-alive
//    requests), oldest first;
// 2. then one whose body is still arriving, oldest first;
// 3. then a connection that has only just arrived;
// never one whose request is being answered, nor an upgraded WebSocket.
//
// A client that sends its request promptly (any well-behaved client, with a
// token or not) therefore always gets a slot: it is the newest connection,
// and junk is evicted before it. Only when every slot holds a request in
// progress is the new connection refused.
//
// Slots are counted in three scopes: per peer address (one address cannot
// take everything), per pool (loopback: this machine, its reverse proxy, its
// Node-RED; remote: the network), each pool capped at three quarters of the
// total so remote junk cannot starve local clients or the other way round,
// and the total. Deadlines are Node's: `headersTimeout` for the head,
// `requestTimeout` for the whole request, so a chunked body that never ends
// is cut off with 408.
//
// Evicting answered keep-alive connections has a price: a client that holds
// thousands of them and reconnects whenever one is let go makes us accept,
// parse and answer tens of thousands of connections a second, the kernel's
// accept queue overflows, and every other client's SYN is dropped. So each
// address whose connections are mostly answered and idle may evict them only
// at a bounded rate (a token bucket); past it, its new connections are held in a tarpit: paused
// before HTTP sees them (about 2 KB each instead of about 6 KB for an HTTP
// connection), unread and unanswered, and closed after a while. A client
// waiting there does not reconnect, so the churn stops, and other addresses
// are admitted as before. The tarpit is bounded; beyond it the newcomer is
// closed at once, before HTTP sees it.

/** A client on a LAN sends its request head within milliseconds of connecting. */
const HEAD_GRACE_MS = 500;
/** Answered idle connections one address may have evicted per second (and in one burst). */
export const IDLE_EVICTIONS_PER_SECOND = 64;
/** How long a tarpitted connection is held before it is closed: this, plus up to as much again (spreads reconnects). */
const TARPIT_HOLD_MS = 10_000;
/** Connections held in the tarpit at most, as a multiple of max_connections (256 → 8,192; ~16 MB). */
const TARPIT_PER_CONNECTION = 32;

type Stage = 'head' | 'body' | 'busy';
type Pool = 'loopback' | 'remote';

interface Entry {
  address: string;
  pool: Pool;
  stage: Stage;
  /** Answered at least once: waiting in 'head' means an idle keep-alive connection. */
  answered: boolean;
  /** The scopes it counts in (total, its pool, its address) and its place in each, in that order. */
  scopes: readonly Scope[];
  places: readonly Place[];
}

export interface AdmissionLimits {
  maxConnections: number;
  maxConnectionsPerAddress: number;
}

export interface AdmissionStats {
  open: number;
  evicted: number;
  refused: number;
  /** Connections put in the tarpit so far, and how many it holds now. */
  tarpitted: number;
  held: number;
}

/** How the upgrade handler tells admission that a connection became a WebSocket. */
const upgradeMarks = new WeakMap<Duplex, () => void>();

/** Called for every upgrade request: its head is complete, and a WebSocket is never evicted. */
export function markUpgraded(socket: Duplex): void {
  upgradeMarks.get(socket)?.();
}

/**
 * A connection's place in one scope's list of its stage: made once per
 * connection and scope, and moved between lists by relinking. Per request a
 * connection changes stage two or three times in each of its three scopes;
 * done with Maps (delete, then set to re-enter as the youngest), V8
 * reallocated their hash tables every few requests, in the old generation
 * where the long-lived Maps are, and under load those tables were most of
 * the old-generation garbage waiting for a mark-compact (bench: heap sampling
 * under GET and POST load). Relinking allocates nothing.
 */
interface Place {
  readonly socket: Socket;
  /** When the connection entered its current stage (Date.now()). */
  since: number;
  list: StageList | undefined;
  prev: Place | undefined;
  next: Place | undefined;
}

/** Connections in one stage within one scope, oldest first. */
class StageList {
  first: Place | undefined;
  last: Place | undefined;

  /** Adds `place` as the youngest. */
  append(place: Place, now: number): void {
    place.since = now;
    place.list = this;
    place.prev = this.last;
    place.next = undefined;
    if (this.last) this.last.next = place;
    else this.first = place;
    this.last = place;
  }
}

/** Takes `place` out of the list it is in, if any. */
function unlink(place: Place): void {
  const list = place.list;
  if (!list) return;
  if (place.prev) place.prev.next = place.next;
  else list.first = place.next;
  if (place.next) place.next.prev = place.prev;
  else list.last = place.prev;
  place.list = place.prev = place.next = undefined;
}

/** Counts and oldest-first order (with the time each entered its stage) of evictable connections within one scope. */
class Scope {
  open = 0;
  /** Of `open`: answered connections waiting for their next request head. */
  idle = 0;
  readonly head = new StageList();
  readonly body = new StageList();

  oldestEvictable(now: number): Socket | undefined {
    const head = this.head.first;
    if (head && now - head.since >= HEAD_GRACE_MS) return head.socket;
    return this.body.first?.socket ?? head?.socket;
  }
}

export function admitConnections(server: Server, limits: AdmissionLimits): AdmissionStats {
  const poolCap = Math.max(1, Math.floor((limits.maxConnections * 3) / 4));
  const addressCap = Math.min(limits.maxConnectionsPerAddress, poolCap);
  const entries = new Map<Socket, Entry>();
  const total = new Scope();
  const pools: Record<Pool, Scope> = { loopback: new Scope(), remote: new Scope() };
  const byAddress = new Map<string, Scope>();
  const stats: AdmissionStats = { open: 0, evicted: 0, refused: 0, tarpitted: 0, held: 0 };
  const tarpitCap = limits.maxConnections * TARPIT_PER_CONNECTION;
  /** Tarpitted sockets and when each is let go. */
  const tarpit = new Map<Socket, number>();

  /** Moves a connection to `stage`; re-entering a stage makes it the youngest there. */
  const setStage = (socket: Socket, stage: Stage, answered = false): void => {
    const entry = entries.get(socket);
    if (!entry) return;
    const now = Date.now();
    const idle = (entry.stage === 'head' && entry.answered ? -1 : 0) + (stage === 'head' && answered ? 1 : 0);
    if (answered) entry.answered = true;
    for (let i = 0; i < entry.scopes.length; i++) {
      const scope = entry.scopes[i]!;
      const place = entry.places[i]!;
      scope.idle += idle;
      unlink(place);
      if (stage !== 'busy') scope[stage].append(place, now);
    }
    entry.stage = stage;
  };

  const forget = (socket: Socket): void => {
    const entry = entries.get(socket);
    if (!entry) return;
    entries.delete(socket);
    const idle = entry.stage === 'head' && entry.answered ? 1 : 0;
    for (let i = 0; i < entry.scopes.length; i++) {
      const scope = entry.scopes[i]!;
      scope.open--;
      scope.idle -= idle;
      unlink(entry.places[i]!);
    }
    const address = byAddress.get(entry.address)!;
    if (address.open === 0) byAddress.delete(entry.address);
    stats.open = total.open;
  };

  /** Lets the oldest evictable connection of `scope` go; false when it has none. */
  const evictFrom = (scope: Scope): boolean => {
    const victim = scope.oldestEvictable(Date.now());
    if (!victim) return false;
    forget(victim);
    victim.destroy();
    stats.evicted++;
    return true;
  };

  const roomIn = (scope: Scope | undefined, cap: number): boolean => scope === undefined || scope.open < cap || evictFrom(scope);

  /** Per address that has drawn on it lately: the answered idle connections it may still have evicted, and when that was counted. */
  const budgets = new Map<string, { tokens: number; at: number }>();
  let prunedAt = 0;
  const refill = (budget: { tokens: number; at: number }, now: number): void => {
    budget.tokens = Math.min(IDLE_EVICTIONS_PER_SECOND, budget.tokens + ((now - budget.at) * IDLE_EVICTIONS_PER_SECOND) / 1000);
    budget.at = now;
  };

  /** Whether an address at its cap may evict its oldest evictable connection now; an answered idle one costs a token. */
  const mayEvictOwn = (address: string, scope: Scope): boolean => {
    const now = Date.now();
    const victim = scope.oldestEvictable(now);
    const entry = victim && entries.get(victim);
    // Only when idle connections are most of what the address holds: a poller among slowloris junk is let go as before.
    if (!entry || entry.stage !== 'head' || !entry.answered || scope.idle * 2 < scope.open) return true;
    if (budgets.size >= 1024 && now - prunedAt >= 1000) {
      // Many addresses: forget those whose budget is whole again (at most once a second, so a crowd costs little).
      prunedAt = now;
      for (const [key, budget] of budgets) {
        refill(budget, now);
        if (budget.tokens >= IDLE_EVICTIONS_PER_SECOND) budgets.delete(key);
      }
    }
    let budget = budgets.get(address);
    if (!budget) budgets.set(address, (budget = { tokens: IDLE_EVICTIONS_PER_SECOND, at: now }));
    refill(budget, now);
    if (budget.tokens < 1) return false;
    budget.tokens--;
    return true;
  };

  const release = (socket: Socket): void => {
    if (!tarpit.delete(socket)) return;
    stats.held = tarpit.size;
    socket.destroy();
  };

  /** Holds `socket` paused and unanswered for a while; false when the tarpit is full. */
  const hold = (socket: Socket): boolean => {
    if (tarpit.size >= tarpitCap) return false;
    socket.pause();
    // pause() alone lets the stream read on up to its high-water mark (and one chunk of up to 64 KB); stop at the handle.
    (socket as unknown as { _handle?: { readStop?: () => void } })._handle?.readStop?.();
    socket.on('error', () => undefined);
    socket.once('close', () => release(socket));
    tarpit.set(socket, Date.now() + TARPIT_HOLD_MS * (1 + Math.random()));
    stats.tarpitted++;
    stats.held = tarpit.size;
    if (!sweeper) sweeper = setInterval(sweep, 1000).unref();
    return true;
  };
  let sweeper: NodeJS.Timeout | undefined;
  const sweep = (): void => {
    const now = Date.now();
    for (const [socket, until] of tarpit) if (until <= now) release(socket);
    if (tarpit.size === 0) {
      clearInterval(sweeper);
      sweeper = undefined;
    }
  };

  /** The total is full only while both pools hold at least their reserve: take from the larger. */
  const roomInTotal = (): boolean => {
    if (total.open < limits.maxConnections) return true;
    const larger = pools.loopback.open >= pools.remote.open ? pools.loopback : pools.remote;
    return evictFrom(larger) || evictFrom(total);
  };

  // Decided before HTTP sets a connection up: HTTP's own listeners run only for admitted ones.
  const httpListeners = server.listeners('connection') as ((socket: Socket) => void)[];
  server.removeAllListeners('connection');
  server.on('connection', (socket: Socket) => {
    if (admit(socket)) for (const listener of httpListeners) listener.call(server, socket);
  });

  // Tarpitted sockets are idle by any measure: shutdown's first sweep lets them go, so close() is not held up.
  const closeIdle = server.closeIdleConnections as (() => void) | undefined;
  if (typeof closeIdle === 'function') {
    server.closeIdleConnections = function (this: Server): void {
      for (const socket of [...tarpit.keys()]) release(socket);
      closeIdle.call(this);
    };
  }

  const admit = (socket: Socket): boolean => {
    const address = socket.remoteAddress ?? '';
    const pool: Pool = isLoopbackAddress(address) ? 'loopback' : 'remote';
    const own = byAddress.get(address);
    if (own && own.open >= addressCap && !mayEvictOwn(address, own)) {
      if (hold(socket)) return false;
      stats.refused++;
      socket.destroy();
      return false;
    }
    const admitted = roomIn(own, addressCap) && roomIn(pools[pool], poolCap) && roomInTotal();
    if (!admitted) {
      stats.refused++;
      socket.destroy();
      return false;
    }
    // Not `own`: making room may have let the address's last connection go, and its scope with it.
    let addressScope = byAddress.get(address);
    if (!addressScope) byAddress.set(address, (addressScope = new Scope()));
    const scopes = [total, pools[pool], addressScope];
    const places = scopes.map((): Place => ({ socket, since: 0, list: undefined, prev: undefined, next: undefined }));
    const entry: Entry = { address, pool, stage: 'head', answered: false, scopes, places };
    entries.set(socket, entry);
    const now = Date.now();
    for (let i = 0; i < scopes.length; i++) {
      scopes[i]!.open++;
      scopes[i]!.head.append(places[i]!, now);
    }
    stats.open = total.open;
    upgradeMarks.set(socket, () => setStage(socket, 'busy'));
    socket.once('close', () => forget(socket));
    return true;
  };

  // Registered before the route handler's listener runs (createServer's), so
  // the stage is right before any handler awaits.
  server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => {
    const socket = req.socket;
    const bodiless = req.headers['content-length'] === undefined || req.headers['content-length'] === '0';
    setStage(socket, bodiless && req.headers['transfer-encoding'] === undefined ? 'busy' : 'body');
    req.once('end', () => {
      if (!res.writableFinished) setStage(socket, 'busy');
    });
    // Answered: the connection waits for its next request head (keep-alive), evictable again.
    res.once('finish', () => setStage(socket, 'head', true));
  });
  return stats;
}
