import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from '../../logging/log.js';
import { isLoopbackAddress } from '../access/loopback.js';
import type { ConnectionBridge } from './connection-bridge.js';
import { HEAD_GRACE_MS, ParkingLot, type ParkingStats } from './parking.js';
import { ClientSocketErrors } from './socket-errors.js';

// Admission, before any request is parsed or any credential looked at. Node's
// own `maxConnections` refuses the newest connection once the cap is reached,
// so a thousand sockets trickling their headers, or ten thousand idle
// keep-alives, lock every real client out. Here the caps are kept without
// turning a well-behaved client away.
//
// Slots are counted in three scopes: per peer address (one address cannot
// take everything), per pool (loopback: this machine, its reverse proxy, its
// Node-RED; remote: the network), each pool capped at three quarters of the
// total so remote junk cannot starve local clients or the other way round,
// and the total. Deadlines are Node's: `headersTimeout` for the head,
// `requestTimeout` for the whole request, so a chunked body that never ends
// is cut off with 408.
//
// An address that has used its slots gets room for a newcomer only from its
// junk: a head still incomplete after HEAD_GRACE_MS (slowloris), else a body
// still arriving after it, oldest first. A connection that works (answered
// and idle, or a request just sent) is never let go for it: that is how a
// poller sharing an address with junk lost its connection mid-request, and
// how a client holding thousands of idle connections was made to reconnect
// them all. When the pool or the total is full, the newcomer takes the slot
// of the oldest evictable connection of the larger pool: a head waiting past
// HEAD_GRACE_MS (trickling, or idle between keep-alive requests), then a body,
// then one just arrived; never a request being answered or a WebSocket.
//
// A newcomer for which no room can be made is parked (parking.ts): served
// from there and kept at a fraction of an HTTP connection's cost, before HTTP
// sees it. Only when the lot is full does a newcomer evict a parked idle
// socket, at a bounded rate per address (a token bucket, since each eviction
// may come back as a reconnect); past it the newcomer is closed at once.

/** Parked idle sockets one address may have evicted per second (and in one burst), once the lot is full. */
export const IDLE_EVICTIONS_PER_SECOND = 64;

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
  /** Requests seen, counted here so nothing else needs a 'request' listener (see requestsSeen). */
  requests: number;
  evicted: number;
  refused: number;
  /** The parking lot's counts. */
  parking: ParkingStats;
  /** Errors of client sockets (resets, broken pipes), admitted, parked, refused or upgraded alike. */
  socketErrors: ClientSocketErrors;
}

const statsOf = new WeakMap<Server, AdmissionStats>();

/**
 * The last answered exchange (the response, which holds its request and
 * socket), kept until the next one is answered, so that a full collection in
 * a quiet moment (the daemon's own after a burst, src/memory/quiet-gc.ts, or
 * V8's memory reducer) always finds one live instance of each object on the
 * request path. With none alive, the maps (hidden classes) of node:http's
 * request, response and stream states died in that collection, V8 threw away
 * the optimized code of the whole request path that embedded them (--trace-deopt:
 * about 65 functions, "weak objects"), and the next burst ran on code rebuilt
 * against new maps, which kept failing its map checks ("wrong map"): bench:get
 * measured 15-20 µs a request more after each quiet spell, for the whole burst.
 * The same mechanism as nextTick's entries (src/memory/tick-shape.ts). One
 * exchange: a few KB at most, and nothing that outlives the next request.
 */
let lastAnswered: ServerResponse | undefined;

/** The exchange kept for its shapes (see lastAnswered); for tests. */
export function keptExchange(): ServerResponse | undefined {
  return lastAnswered;
}

/**
 * Requests `server` has seen, for whoever needs the request rate (the quiet
 * collections). Each further 'request' listener costs every request: with more
 * than one, Node copies the listener list per emit, and under the service's
 * node options a second listener measured 1.4 µs of a GET's 22 (bench:get).
 */
export function requestsSeen(server: Server): number {
  return statsOf.get(server)?.requests ?? 0;
}

/** How the upgrade handler tells admission that a connection became a WebSocket. */
const upgradeMarks = new WeakMap<Duplex, () => Duplex>();

/**
 * Called for every upgrade request: its head is complete, and a WebSocket is
 * never evicted. Returns the connection to upgrade: for a request that came
 * from the parking lot, the socket itself rather than its bridge.
 */
export function markUpgraded(socket: Duplex): Duplex {
  return upgradeMarks.get(socket)?.() ?? socket;
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
  /** When the connection entered its current stage (performance.now(): a wall clock step must not age it). */
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

/**
 * Counts and oldest-first order (with the time each entered its stage) of evictable connections within one scope.
 * Heads never answered and answered connections waiting for their next head are listed apart, so the oldest
 * junk is the first of its list: searching one list for it walked every idle connection of a full address,
 * once for each newcomer of a flood.
 */
class Scope {
  open = 0;
  /** Of `open`: answered connections waiting for their next request head. */
  idle = 0;
  /** Connections whose first head has not completed. */
  readonly head = new StageList();
  /** Answered connections waiting for their next head (keep-alive). */
  readonly waiting = new StageList();
  readonly body = new StageList();

  /** The list a connection in `stage` belongs to, if any. */
  listOf(stage: Stage, answered: boolean): StageList | undefined {
    if (stage === 'busy') return undefined;
    if (stage === 'body') return this.body;
    return answered ? this.waiting : this.head;
  }

  oldestEvictable(now: number): Socket | undefined {
    const fresh = this.head.first;
    const idle = this.waiting.first;
    const head = fresh && (!idle || fresh.since <= idle.since) ? fresh : idle;
    if (head && now - head.since >= HEAD_GRACE_MS) return head.socket;
    return this.body.first?.socket ?? head?.socket;
  }

  /** The oldest connection that is clearly junk: a head never completed, or a body, after HEAD_GRACE_MS. */
  oldestJunk(now: number): Socket | undefined {
    const head = this.head.first;
    if (head && now - head.since >= HEAD_GRACE_MS) return head.socket;
    const body = this.body.first;
    return body && now - body.since >= HEAD_GRACE_MS ? body.socket : undefined;
  }
}

/** What admission gives the HTTP server: its counts, and what each request must pass through first. */
export interface Admission {
  stats: AdmissionStats;
  /**
   * To be called by the server's one 'request' listener, before it routes:
   * moves the connection to its request's stage (a listener of its own would
   * be a second one, which every request pays for: see requestsSeen).
   */
  requestStarted(req: IncomingMessage, res: ServerResponse): void;
}

export function admitConnections(server: Server, limits: AdmissionLimits, log?: Logger): Admission {
  const poolCap = Math.max(1, Math.floor((limits.maxConnections * 3) / 4));
  const addressCap = Math.min(limits.maxConnectionsPerAddress, poolCap);
  const entries = new Map<Socket, Entry>();
  const total = new Scope();
  const pools: Record<Pool, Scope> = { loopback: new Scope(), remote: new Scope() };
  const byAddress = new Map<string, Scope>();
  // Bridges from the lot are HTTP connections like any other, set up by HTTP's own listeners.
  const httpListeners = server.listeners('connection') as ((socket: Duplex) => void)[];
  const lot = new ParkingLot(limits.maxConnections, (bridge) => {
    upgradeMarks.set(bridge, () => lot.takeOver(bridge));
    for (const listener of httpListeners) listener.call(server, bridge);
  });
  const stats: AdmissionStats = { open: 0, requests: 0, evicted: 0, refused: 0, parking: lot.stats, socketErrors: new ClientSocketErrors(log) };
  statsOf.set(server, stats);

  /** Moves a connection to `stage`; re-entering a stage makes it the youngest there. */
  const setStage = (socket: Socket, stage: Stage, answered = false): void => {
    const entry = entries.get(socket);
    if (!entry) return;
    const now = performance.now();
    const idle = (entry.stage === 'head' && entry.answered ? -1 : 0) + (stage === 'head' && answered ? 1 : 0);
    if (answered) entry.answered = true;
    for (let i = 0; i < entry.scopes.length; i++) {
      const scope = entry.scopes[i]!;
      const place = entry.places[i]!;
      scope.idle += idle;
      unlink(place);
      scope.listOf(stage, entry.answered)?.append(place, now);
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

  const evict = (victim: Socket): void => {
    forget(victim);
    victim.destroy();
    stats.evicted++;
  };

  /** Lets the oldest evictable connection of `scope` go; false when it has none. */
  const evictFrom = (scope: Scope): boolean => {
    const victim = scope.oldestEvictable(performance.now());
    if (!victim) return false;
    evict(victim);
    return true;
  };

  /** Lets the oldest junk connection of `scope` go; false when it has none. */
  const evictJunkFrom = (scope: Scope): boolean => {
    const victim = scope.oldestJunk(performance.now());
    if (!victim) return false;
    evict(victim);
    return true;
  };

  const roomIn = (scope: Scope | undefined, cap: number): boolean => scope === undefined || scope.open < cap || evictFrom(scope);

  /** Per address that has drawn on it lately: the parked idle sockets it may still have evicted, and when that was counted. */
  const budgets = new Map<string, { tokens: number; at: number }>();
  let prunedAt = 0;
  const refill = (budget: { tokens: number; at: number }, now: number): void => {
    budget.tokens = Math.min(IDLE_EVICTIONS_PER_SECOND, budget.tokens + ((now - budget.at) * IDLE_EVICTIONS_PER_SECOND) / 1000);
    budget.at = now;
  };
  const takeToken = (address: string): boolean => {
    const now = performance.now();
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

  /** Parks a newcomer of a full address; when the lot is full, in place of the idle socket parked longest, within the address's budget. */
  const park = (socket: Socket, address: string, pool: Pool): boolean =>
    lot.park(socket, pool) || (takeToken(address) && lot.evictIdle(pool) && lot.park(socket, pool));

  /** The total is full only while both pools hold at least their reserve: take from the larger. */
  const roomInTotal = (): boolean => {
    if (total.open < limits.maxConnections) return true;
    const larger = pools.loopback.open >= pools.remote.open ? pools.loopback : pools.remote;
    return evictFrom(larger) || evictFrom(total);
  };

  // Decided before HTTP sets a connection up: HTTP's own listeners run only for admitted ones.
  server.removeAllListeners('connection');
  server.on('connection', (socket: Socket) => {
    // First, for the socket's whole life: HTTP's own error listener goes when it hands the socket to an upgrade.
    stats.socketErrors.watch(socket);
    if (admit(socket)) for (const listener of httpListeners) listener.call(server, socket);
  });

  // Parked sockets are idle by any measure: shutdown's first sweep lets them go, so close() is not held up.
  const closeIdle = server.closeIdleConnections as (() => void) | undefined;
  if (typeof closeIdle === 'function') {
    server.closeIdleConnections = function (this: Server): void {
      lot.closeAll();
      closeIdle.call(this);
    };
  }

  const admit = (socket: Socket): boolean => {
    const address = socket.remoteAddress ?? '';
    const pool: Pool = isLoopbackAddress(address) ? 'loopback' : 'remote';
    const own = byAddress.get(address);
    if (own && own.open >= addressCap && !evictJunkFrom(own)) {
      if (park(socket, address, pool)) return false;
      stats.refused++;
      socket.destroy();
      return false;
    }
    const admitted = roomIn(own, addressCap) && roomIn(pools[pool], poolCap) && roomInTotal();
    if (!admitted) {
      // Every slot holds a request in progress or a WebSocket.
      if (park(socket, address, pool)) return false;
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
    const now = performance.now();
    for (let i = 0; i < scopes.length; i++) {
      scopes[i]!.open++;
      scopes[i]!.head.append(places[i]!, now);
    }
    stats.open = total.open;
    upgradeMarks.set(socket, () => {
      setStage(socket, 'busy');
      return socket;
    });
    socket.once('close', () => forget(socket));
    return true;
  };

  /**
   * Answered: the connection waits for its next request head (keep-alive),
   * evictable again. One function for every response (`this` is the
   * response), not a closure per request; the response's request still holds
   * the socket when 'finish' comes, while node:http has already detached the
   * response from it.
   */
  function answered(this: ServerResponse): void {
    setStage(this.req.socket as Socket, 'head', true);
    lastAnswered = this;
  }

  // Called by the route handler before anything else, so the stage is right before any handler awaits.
  const requestStarted = (req: IncomingMessage, res: ServerResponse): void => {
    stats.requests++;
    if (ParkingLot.isBridge(req.socket)) {
      const bridge: ConnectionBridge = req.socket;
      lot.requestStarted(bridge);
      res.once('close', () => lot.requestFinished(bridge));
      return;
    }
    const socket = req.socket;
    const bodiless = req.headers['content-length'] === undefined || req.headers['content-length'] === '0';
    const withBody = !bodiless || req.headers['transfer-encoding'] !== undefined;
    setStage(socket, withBody ? 'body' : 'busy');
    // A request without a body is busy from its head on: nothing to wait for
    // (one listener fewer per GET; each was a visible part of its cost).
    if (withBody) {
      req.once('end', () => {
        if (!res.writableFinished) setStage(socket, 'busy');
      });
    }
    // A response finishes once, so `on` does (without the wrapper `once` makes).
    res.on('finish', answered);
  };
  return { stats, requestStarted };
}
