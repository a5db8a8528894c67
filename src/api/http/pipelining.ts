import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';

// How much of one event-loop turn one connection's pipelined requests may
// take. Node's HTTP parser hands over every request in what one read brought
// (up to 64 KiB: over a thousand small GETs) within the same turn, and each
// is routed at once, so one connection pipelining requests kept every other
// client waiting for the whole batch, read after read.
//
// Here a connection gets REQUESTS_PER_TURN requests routed per turn. The rest
// wait in arrival order (their answers keep that order anyway: HTTP/1.1 sends
// them in the order of the requests), the socket is not read meanwhile, and
// the next few are routed on a later turn, after other clients had theirs.
//
// For a TCP socket a "turn" is one read: the requests one read brought arrive
// together, and the handle's count of bytes read moves only with the next
// read. libuv reads a socket again in the same event-loop turn only after a
// read that filled its 64 KB buffer, which holds more than REQUESTS_PER_TURN
// requests unless each is 16 KB or more, and then the connection is held: per
// event-loop turn the bound is the same but for such large requests. Counting event-loop turns instead needed a setImmediate per turn to
// see the turn end, on every GET: an Immediate object, its async id and a
// libuv handle ref per turn, and a map for V8 to forget at every quiet
// collection (bench:get, --trace-deopt: setImmediate, processImmediate and
// Immediate deoptimized for "weak objects"). Bridges from the parking lot
// are plain streams without a handle: for them the turn is still the
// event-loop turn.

/** Requests one connection gets routed in one event-loop turn. */
export const REQUESTS_PER_TURN = 4;
/**
 * Requests parsed and waiting to be routed on one connection. Node reads on
 * when its own write back-pressure ends even while we hold the socket, so a
 * connection can add a read's worth of requests now and then; one that
 * piles up this many is not a client but a flood, and is closed.
 */
export const MAX_WAITING_REQUESTS = 8192;

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** The libuv handle of a TCP socket, whose reads node:http's parser consumes directly. */
interface ReadingHandle {
  reading?: boolean;
  readStart(): number;
  readStop(): number;
}

/**
 * Stops reading the connection. For a TCP socket node:http's parser reads the
 * handle itself, past the stream, where `pause()` stops nothing: the handle's
 * reads are stopped. Bridges from the parking lot are plain streams.
 */
function holdReading(socket: Duplex): void {
  const handle = (socket as { _handle?: ReadingHandle | null })._handle;
  if (handle && typeof handle.readStop === 'function') {
    if (handle.reading !== false) {
      handle.reading = false;
      handle.readStop();
    }
  } else socket.pause();
}

function releaseReading(socket: Duplex): void {
  const handle = (socket as { _handle?: ReadingHandle | null })._handle;
  if (handle && typeof handle.readStart === 'function') {
    if (handle.reading === false) {
      handle.reading = true;
      handle.readStart();
    }
  } else socket.resume();
}

interface Connection {
  /** The read (or, for a bridge, the event-loop turn) its count is for: see turnOf. */
  turn: number;
  routed: number;
  waiting: Array<[IncomingMessage, ServerResponse]>;
  /** Set while a later turn is scheduled to route what waits. */
  scheduled: boolean;
}

let turn = 0;
let turnEnding = false;
/** Counts turns: the first request of a turn schedules the end of it. */
function currentTurn(): number {
  if (!turnEnding) {
    turnEnding = true;
    setImmediate(() => {
      turn++;
      turnEnding = false;
    });
  }
  return turn;
}

/** The libuv handle of a TCP socket, with its running count of bytes read. */
interface CountingHandle {
  bytesRead?: unknown;
}

/**
 * Which turn a request of `socket` belongs to: for a TCP socket, its handle's
 * count of bytes read (the same for every request of one read, larger for the
 * next), else the event-loop turn (currentTurn). A socket is one kind for its
 * whole life, so the two kinds of number never meet in one Connection.
 */
function turnOf(socket: Duplex): number {
  const read = (socket as { _handle?: CountingHandle | null })._handle?.bytesRead;
  return typeof read === 'number' ? read : currentTurn();
}

/** Wraps a request handler so each connection has at most REQUESTS_PER_TURN requests routed per turn. */
export function takingTurns(handler: Handler): Handler {
  const connections = new WeakMap<Duplex, Connection>();

  const routeWaiting = (socket: Duplex, connection: Connection): void => {
    // A turn of its own: the waiting requests are routed from an Immediate, after the loop's other I/O.
    connection.scheduled = false;
    connection.turn = turnOf(socket);
    connection.routed = 0;
    while (connection.waiting.length > 0 && connection.routed < REQUESTS_PER_TURN) {
      const [req, res] = connection.waiting.shift()!;
      connection.routed++;
      if (!socket.destroyed) handler(req, res);
    }
    if (connection.waiting.length > 0 && !socket.destroyed) {
      // node:http may have started reading again for its own reasons (its write back-pressure ended).
      holdReading(socket);
      connection.scheduled = true;
      setImmediate(routeWaiting, socket, connection);
    } else if (connection.waiting.length === 0 && !socket.destroyed) {
      releaseReading(socket);
    }
  };

  return (req, res) => {
    const socket = req.socket;
    const now = turnOf(socket);
    let connection = connections.get(socket);
    if (!connection) connections.set(socket, (connection = { turn: now, routed: 0, waiting: [], scheduled: false }));
    if (connection.turn !== now) {
      connection.turn = now;
      connection.routed = 0;
    }
    if (connection.waiting.length === 0 && connection.routed < REQUESTS_PER_TURN) {
      connection.routed++;
      handler(req, res);
      return;
    }
    if (connection.waiting.length >= MAX_WAITING_REQUESTS) {
      socket.destroy();
      return;
    }
    connection.waiting.push([req, res]);
    // No further reads; what the parser has in hand still arrives, and waits here.
    holdReading(socket);
    if (!connection.scheduled) {
      connection.scheduled = true;
      setImmediate(routeWaiting, socket, connection);
    }
  };
}
