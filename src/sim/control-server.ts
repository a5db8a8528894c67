import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { SimulatedBoard } from './simulated-board.js';

// A small HTTP side door into a running simulator, so tests can look at what
// a master wrote and drive inputs the master should see:
//   GET  /registers?unit=1&space=holding&address=0&count=4  → {"values":[…]}
//   POST /registers {"unit":1,"space":"holding","address":0,"values":[…]} → {"ok":true,"at":"<ns>"}
//   POST /registers {…, "delayMs":12}                                → {"ok":true,"at":null}
//   GET  /changes?unit=1                                     → {"at":"<ns>","readAt":"<ns>"|null,"writtenAt":"<ns>"|null}
//   GET  /stats                                              → {"1":{"requests":N},…}
//   GET  /inputs?unit=1&since=<ms>                           → {"changes":[{"at":ms,"address","bit","on"},…]}
//   POST /silence {"unit":1,"silent":true}                   → {"ok":true}
// /inputs is the simulator's own log of digital input edges (wall clock),
// /silence makes a board answer nothing (and answer again), as /power off and on do.
//   POST /power {"unit":1,"state":"off"|"on"|"cycle"}        → {"ok":true}
//   POST /pulses {"unit":1,"input":0,"count":N}              → {"counter":<raw 32-bit value>}
// `off` silences the board, `on` brings it back as it was, `cycle` brings it
// back as after a power cycle (registers at power-on values, counters at 0).
// `pulses` counts N rising edges on a digital input (0-based), wrapping at 2^32.
// `at` is when the POST set the registers, `readAt` when the master first read
// one of them after that, both in ns on process.hrtime.bigint()'s monotonic
// clock (CLOCK_MONOTONIC, the same in every process of the machine).
// With `delayMs` the registers are set that many ms after the reply, from a
// timer, as an input wired to the board would change: nothing of this
// request (its parsing, its reply, the caller handling the reply) is then
// running when the master reads the change and passes it on, so a latency
// measured from `at` (GET /changes) is the master's alone.

type Space = 'holding' | 'input';

class BadRequest extends Error {}

/** A delayed write is for timing a change a moment away, not a scheduler. */
const MAX_DELAY_MS = 60_000;

/**
 * How long an idle client connection is kept. Node's default (5 s) lets the server close a
 * connection at the moment a client that reuses it for up to 4 s (fetch's default) sends on it,
 * when a loaded machine delays one of them: the request fails with "other side closed". The
 * control API's clients are tests and benches on this machine, so the client closes first.
 */
const KEEP_ALIVE_TIMEOUT_MS = 65_000;

/** `connections`: how many masters hold a Modbus TCP connection to the simulator now (absent without --tcp). */
export function controlServer(boards: ReadonlyMap<number, SimulatedBoard>, connections?: () => Promise<number>): Server {
  const server = createServer((req, res) => {
    handle(boards, req, connections)
      .then((body) => reply(res, 200, body))
      .catch((error: Error) => reply(res, error instanceof BadRequest ? 400 : 500, { error: error.message }));
  });
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  return server;
}

async function handle(boards: ReadonlyMap<number, SimulatedBoard>, req: IncomingMessage, connections?: () => Promise<number>): Promise<unknown> {
  const url = new URL(req.url ?? '/', 'http://control');
  // A master that leaves a connection open after it should have stopped (an old bus after a reload) shows here.
  if (url.pathname === '/connections' && req.method === 'GET') {
    return { modbus_tcp: connections ? await connections() : null };
  }
  if (url.pathname === '/stats' && req.method === 'GET') {
    return Object.fromEntries([...boards].map(([unit, board]) => [unit, { requests: board.requests }]));
  }
  if (url.pathname === '/changes' && req.method === 'GET') {
    const board = boardOf(boards, url.searchParams.get('unit'));
    const change = board.lastChange();
    // writtenAt: the master's last write to the board (an automation's output, say).
    return { at: change?.at.toString() ?? null, readAt: change?.readAt?.toString() ?? null, writtenAt: board.masterWriteAt?.toString() ?? null };
  }
  if (url.pathname === '/inputs' && req.method === 'GET') {
    const since = Number(url.searchParams.get('since') ?? 0);
    return { changes: boardOf(boards, url.searchParams.get('unit')).inputLog.filter((change) => change.at >= since) };
  }
  if (url.pathname === '/silence' && req.method === 'POST') {
    const body = JSON.parse(await readAll(req)) as { unit?: unknown; silent?: unknown };
    if (typeof body.silent !== 'boolean') throw new BadRequest('silent must be true or false');
    boardOf(boards, body.unit).silent = body.silent;
    return { ok: true };
  }
  if (url.pathname === '/power' && req.method === 'POST') {
    const body = JSON.parse(await readAll(req)) as { unit?: unknown; state?: unknown };
    const board = boardOf(boards, body.unit);
    if (body.state === 'off') board.powerOff();
    else if (body.state === 'on' || body.state === 'cycle') board.powerOn(body.state === 'cycle');
    else throw new BadRequest('state must be off, on or cycle');
    return { ok: true };
  }
  if (url.pathname === '/pulses' && req.method === 'POST') {
    const body = JSON.parse(await readAll(req)) as { unit?: unknown; input?: unknown; count?: unknown };
    const board = boardOf(boards, body.unit);
    try {
      return { counter: board.addPulses(integer(body.input, 'input'), integer(body.count, 'count')) };
    } catch (error) {
      throw error instanceof RangeError ? new BadRequest(error.message) : error;
    }
  }
  if (url.pathname !== '/registers') throw new BadRequest(`no such resource: ${url.pathname}`);
  if (req.method === 'GET') {
    const q = url.searchParams;
    const board = boardOf(boards, q.get('unit'));
    const space = spaceOf(q.get('space') ?? 'holding');
    const address = integer(q.get('address'), 'address');
    const count = integer(q.get('count') ?? '1', 'count');
    return { values: Array.from({ length: count }, (_, i) => board.get(space, address + i)) };
  }
  if (req.method === 'POST') {
    const body = JSON.parse(await readAll(req)) as { unit?: unknown; space?: unknown; address?: unknown; values?: unknown; delayMs?: unknown };
    const board = boardOf(boards, body.unit);
    const space = spaceOf(body.space ?? 'holding');
    const address = integer(body.address, 'address');
    if (!Array.isArray(body.values)) throw new BadRequest('values must be an array of register values');
    const values = body.values.map((value) => integer(value, 'value') & 0xffff);
    const apply = (): bigint => {
      values.forEach((value, i) => board.set(space, address + i, value));
      return board.markChanged(space, address, values.length);
    };
    if (body.delayMs === undefined) return { ok: true, at: apply().toString() };
    const delayMs = integer(body.delayMs, 'delayMs');
    if (delayMs > MAX_DELAY_MS) throw new BadRequest(`delayMs must be at most ${MAX_DELAY_MS}`);
    setTimeout(apply, delayMs);
    return { ok: true, at: null };
  }
  throw new BadRequest(`${req.method} not allowed`);
}

function boardOf(boards: ReadonlyMap<number, SimulatedBoard>, unit: unknown): SimulatedBoard {
  const board = boards.get(Number(unit));
  if (!board) throw new BadRequest(`no simulated board with unit ${String(unit)}`);
  return board;
}

function spaceOf(space: unknown): Space {
  if (space !== 'holding' && space !== 'input') throw new BadRequest(`space must be holding or input, got ${String(space)}`);
  return space;
}

function integer(value: unknown, name: string): number {
  const number = Number(value);
  if (value === null || value === undefined || !Number.isInteger(number) || number < 0) {
    throw new BadRequest(`${name} must be a non-negative integer, got ${String(value)}`);
  }
  return number;
}

async function readAll(req: IncomingMessage): Promise<string> {
  let body = '';
  req.setEncoding('utf8');
  for await (const chunk of req) body += chunk as string;
  return body;
}

function reply(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}
