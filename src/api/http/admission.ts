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

/** A client on a LAN sends its request head within milliseconds of connecting. */
const HEAD_GRACE_MS = 500;

type Stage = 'head' | 'body' | 'busy';
type Pool = 'loopback' | 'remote';

interface Entry {
  address: string;
  pool: Pool;
  stage: Stage;
}

export interface AdmissionLimits {
  maxConnections: number;
  maxConnectionsPerAddress: number;
}

export interface AdmissionStats {
  open: number;
  evicted: number;
  refused: number;
}

/** How the upgrade handler tells admission that a connection became a WebSocket. */
const upgradeMarks = new WeakMap<Duplex, () => void>();

/** Called for every upgrade request: its head is complete, and a WebSocket is never evicted. */
export function markUpgraded(socket: Duplex): void {
  upgradeMarks.get(socket)?.();
}

/** Counts and oldest-first order (with the time each entered its stage) of evictable connections within one scope. */
class Scope {
  open = 0;
  readonly head = new Map<Socket, number>();
  readonly body = new Map<Socket, number>();

  oldestEvictable(now: number): Socket | undefined {
    let youngHead: Socket | undefined;
    for (const [socket, since] of this.head) {
      if (now - since >= HEAD_GRACE_MS) return socket;
      youngHead = socket;
      break;
    }
    for (const socket of this.body.keys()) return socket;
    return youngHead;
  }
}

export function admitConnections(server: Server, limits: AdmissionLimits): AdmissionStats {
  const poolCap = Math.max(1, Math.floor((limits.maxConnections * 3) / 4));
  const entries = new Map<Socket, Entry>();
  const total = new Scope();
  const pools: Record<Pool, Scope> = { loopback: new Scope(), remote: new Scope() };
  const byAddress = new Map<string, Scope>();
  const stats: AdmissionStats = { open: 0, evicted: 0, refused: 0 };

  const scopesOf = (entry: Entry): Scope[] => [total, pools[entry.pool], byAddress.get(entry.address)!];

  /** Moves a connection to `stage`; re-entering a stage makes it the youngest there. */
  const setStage = (socket: Socket, stage: Stage): void => {
    const entry = entries.get(socket);
    if (!entry) return;
    const now = Date.now();
    for (const scope of scopesOf(entry)) {
      scope.head.delete(socket);
      scope.body.delete(socket);
      if (stage !== 'busy') scope[stage].set(socket, now);
    }
    entry.stage = stage;
  };

  const forget = (socket: Socket): void => {
    const entry = entries.get(socket);
    if (!entry) return;
    entries.delete(socket);
    for (const scope of scopesOf(entry)) {
      scope.open--;
      scope.head.delete(socket);
      scope.body.delete(socket);
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

  /** The total is full only while both pools hold at least their reserve: take from the larger. */
  const roomInTotal = (): boolean => {
    if (total.open < limits.maxConnections) return true;
    const larger = pools.loopback.open >= pools.remote.open ? pools.loopback : pools.remote;
    return evictFrom(larger) || evictFrom(total);
  };

  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? '';
    const pool: Pool = isLoopbackAddress(address) ? 'loopback' : 'remote';
    const admitted = roomIn(byAddress.get(address), limits.maxConnectionsPerAddress) && roomIn(pools[pool], poolCap) && roomInTotal();
    if (!admitted) {
      stats.refused++;
      socket.destroy();
      return;
    }
    const entry: Entry = { address, pool, stage: 'head' };
    entries.set(socket, entry);
    if (!byAddress.has(address)) byAddress.set(address, new Scope());
    const now = Date.now();
    for (const scope of scopesOf(entry)) {
      scope.open++;
      scope.head.set(socket, now);
    }
    stats.open = total.open;
    upgradeMarks.set(socket, () => setStage(socket, 'busy'));
    socket.once('close', () => forget(socket));
  });

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
    res.once('finish', () => setStage(socket, 'head'));
  });
  return stats;
}
