import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { HEAD_GRACE_MS } from '../../../src/api/http/parking.js';
import { spawnDaemon, type SpawnedDaemon } from '../../helpers/spawn-daemon.js';
import { SIMULATED_BUS, configFile, httpCall } from '../../helpers/http-call.js';

// Resource caps a hostile or broken client runs into: connection count,
// slow headers, deep JSON, big bodies.

// One daemon per limit under test, so one test's held or cut connections
// cannot leak into another's count or timing.
const daemons: SpawnedDaemon[] = [];
let capped: number;
let impatient: number;
let plain: string;

before(async () => {
  const start = async (limits: string[]) => {
    const { dir, file } = configFile(['apis:', '  limits:', ...limits.map((line) => `    ${line}`), SIMULATED_BUS].join('\n'));
    const daemon = await spawnDaemon(['--config', file], { cwd: dir });
    daemons.push(daemon);
    return daemon.baseUrl;
  };
  const [cappedUrl, impatientUrl, plainUrl] = await Promise.all([
    start(['max_connections: 3']),
    start(['headers_timeout_ms: 300', 'request_timeout_ms: 600']),
    start([]),
  ]);
  capped = Number(new URL(cappedUrl!).port);
  impatient = Number(new URL(impatientUrl!).port);
  plain = plainUrl!;
});

after(async () => {
  for (const daemon of daemons) assert.equal(await daemon.stop(), 0);
});

async function openSocket(port: number): Promise<Socket> {
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => undefined); // resets are expected here; the assertions look at what arrived
  await once(socket, 'connect');
  return socket;
}

/** Everything the server sent until it closed the connection, or null if it is still open after `ms`. */
async function untilClosed(socket: Socket, ms: number): Promise<string | null> {
  let received = '';
  socket.setEncoding('utf8').on('data', (chunk: string) => (received += chunk));
  // Not events.once: that rejects on the 'error' a reset brings, and a reset is an expected way to be cut off.
  const closed = new Promise<string>((resolve) => socket.once('close', () => resolve(received)));
  const timer = new Promise<null>((resolve) => setTimeout(() => resolve(null), ms));
  return Promise.race([closed, timer]);
}

test('at max_connections a new client is served while tricklers hold every slot; the oldest trickler past the grace time makes room', async () => {
  // Trickle headers so the held connections look like real (slow) clients.
  const held: Socket[] = [];
  for (let i = 0; i < 3; i++) {
    const socket = await openSocket(capped);
    socket.write('GET /rest/di/1_01 HTTP/1.1\r\n');
    held.push(socket);
  }
  // Their heads may still complete: the newcomer is served from the parking lot, nothing is evicted for it.
  assert.equal((await httpCall(`http://127.0.0.1:${capped}`, '/rest/di/1_01')).status, 200, 'the well-behaved newcomer is served');
  // Half a second on, an incomplete head is junk.
  await sleep(HEAD_GRACE_MS + 100);
  const oldestClosed = untilClosed(held[0]!, 3000);
  assert.equal((await httpCall(`http://127.0.0.1:${capped}`, '/rest/di/1_01')).status, 200);
  assert.equal(await oldestClosed, '', 'the oldest trickler was let go, without an answer');
  for (const socket of held) socket.destroy();
});

test('a client that never finishes its headers is cut off (slowloris)', async () => {
  const slow = await openSocket(impatient);
  slow.write('GET /rest/di/1_01 HTTP/1.1\r\nHost: x\r\n');
  const started = Date.now();
  const received = await untilClosed(slow, 4000);
  assert.notEqual(received, null, 'connection closed by the server');
  assert.ok(Date.now() - started < 4000);
  assert.match(received!, /^(HTTP\/1\.1 408|$)/);
});

test('a client that never finishes its body is cut off', async () => {
  const slow = await openSocket(impatient);
  slow.write('POST /rest/do/1_01 HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\nvalue=');
  assert.notEqual(await untilClosed(slow, 4000), null);
});

test('JSON nested deeper than 32 levels is refused before parsing', async () => {
  const post = (body: string) => httpCall(plain, '/json/do/1_01', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body });
  const deep = await post(`{"value":${'['.repeat(33)}${']'.repeat(33)}}`);
  assert.equal(deep.status, 400);
  assert.match(deep.json.errors.JSONDecodeError, /nested 34 levels deep; at most 32/);
  const bomb = await post('['.repeat(60_000));
  assert.equal(bomb.status, 400);
  assert.ok('JSONDecodeError' in bomb.json.errors);
  const shallow = await post(`{"value":${'['.repeat(31)}${']'.repeat(31)}}`);
  assert.equal(shallow.status, 400);
  assert.ok(!('JSONDecodeError' in shallow.json.errors), 'within the bound the value reaches validation');
  const quoted = await post(`{"alias":"${'['.repeat(100)}"}`);
  assert.ok(!('JSONDecodeError' in quoted.json.errors), 'brackets inside strings do not count');
});

test('a body over 64 KiB is refused with 413, declared or not', async () => {
  const big = 'value=1&pad=' + 'x'.repeat(64 * 1024);
  const declared = await httpCall(plain, '/rest/do/1_01', { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: big });
  assert.equal(declared.status, 413);
  const chunked = await httpCall(plain, '/rest/do/1_01', {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'Transfer-Encoding': 'chunked' },
    body: big,
  });
  assert.equal(chunked.status, 413);
});
