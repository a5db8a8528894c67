import assert from 'node:assert/strict';
import { once } from 'node:events';
import { Socket, connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { spawnDaemon, type SpawnedDaemon } from '../../helpers/spawn-daemon.js';
import { SIMULATED_BUS, bearer, configFile, httpCall } from '../../helpers/http-call.js';
import { connect as wsConnect, type TestClient } from '../../helpers/ws-client.js';

// A WebSocket upgrade that iogate refuses itself, then a TCP reset from the
// client. node:http lets go of an upgraded socket, error listener included;
// a refusal written to it used to meet the reset as an unhandled 'error'
// (read ECONNRESET) and end the process. Each refusal path is driven here
// against the built daemon with a reset at two moments: before the refusal
// is written, and after it was read. After each, a supervising client must
// still be served and the reset counted in /metrics.

const READ = 'upgrade-reset-read-token';
const WRITE = 'upgrade-reset-write-token';

function yaml(limits: string): string {
  return [
    'apis:',
    '  websocket: {enabled: true}',
    '  auth:',
    '    loopback_anonymous: false',
    '    tokens:',
    `      - {name: panel, token: ${READ}, scope: read}`,
    `      - {name: scada, token: ${WRITE}, scope: write}`,
    `  limits: {max_websocket_clients: 1${limits}}`,
    SIMULATED_BUS,
  ].join('\n');
}

interface Refusal {
  name: string;
  status: number;
  path: string;
  headers: Record<string, string>;
}

const REFUSALS: Refusal[] = [
  { name: 'a path other than /ws', status: 404, path: '/nope', headers: bearer(WRITE) },
  { name: 'a foreign Origin', status: 403, path: '/ws', headers: { ...bearer(WRITE), Origin: 'http://evil.example' } },
  { name: 'a foreign Host', status: 421, path: '/ws', headers: { ...bearer(WRITE), Host: 'attacker.example:8080' } },
  { name: 'no credentials', status: 401, path: '/ws', headers: {} },
  { name: 'a wrong token', status: 401, path: '/ws?token=wrong', headers: {} },
  // One client is open (see `holder` below), and the cap is one.
  { name: 'the client cap', status: 503, path: '/ws', headers: bearer(WRITE) },
];

function upgradeRequest(port: number, { path, headers }: Refusal): string {
  const all: Record<string, string> = {
    Host: `127.0.0.1:${port}`,
    Upgrade: 'websocket',
    Connection: 'Upgrade',
    'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==',
    'Sec-WebSocket-Version': '13',
    ...headers,
  };
  return `GET ${path} HTTP/1.1\r\n${Object.entries(all)
    .map(([name, value]) => `${name}: ${value}`)
    .join('\r\n')}\r\n\r\n`;
}

/** Sends the upgrade; resets at once, or once the refusal's status line has arrived (returned). */
async function upgradeThenReset(port: number, refusal: Refusal, moment: 'at once' | 'after the reply'): Promise<string> {
  const socket: Socket = connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  await once(socket, 'connect');
  socket.write(upgradeRequest(port, refusal));
  let reply = '';
  if (moment === 'after the reply') {
    socket.setEncoding('latin1');
    while (!reply.includes('\r\n')) reply += (await once(socket, 'data'))[0] as string;
  }
  socket.resetAndDestroy();
  await once(socket, 'close');
  return reply;
}

async function socketErrors(daemon: SpawnedDaemon): Promise<number> {
  const { text } = await httpCall(daemon.baseUrl, '/metrics', { headers: bearer(READ) });
  let sum = 0;
  for (const match of text.matchAll(/^iogate_http_socket_errors_total(?:\{[^}]*\})? (\d+)$/gm)) sum += Number(match[1]);
  return sum;
}

/** Until the daemon has counted more than `before` socket errors; a bounded wait. */
async function errorsAbove(daemon: SpawnedDaemon, before: number): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const now = await socketErrors(daemon);
    if (now > before) return now;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return socketErrors(daemon);
}

async function assertServing(daemon: SpawnedDaemon): Promise<void> {
  const reply = await httpCall(daemon.baseUrl, '/rest/do/1_01', { headers: bearer(READ) });
  assert.equal(reply.status, 200, reply.text);
  assert.equal(daemon.child.exitCode, null, daemon.output());
  assert.equal(daemon.child.signalCode, null);
}

// Directly admitted connections, and connections from the parking lot
// (max_connections_per_address 1 with one idle keep-alive connection held,
// so every other connection of 127.0.0.1 is parked and reaches HTTP through a bridge).
for (const [mode, limits] of [
  ['admitted', ''],
  ['parked', ', max_connections_per_address: 1'],
] as const) {
  describe(`refused upgrades followed by a reset (${mode} connections)`, () => {
    let daemon: SpawnedDaemon;
    let port: number;
    let holder: TestClient;
    let keepAlive: Socket | undefined;

    before(async () => {
      const { dir, file } = configFile(yaml(limits));
      daemon = await spawnDaemon(['--config', file], { cwd: dir });
      port = Number(new URL(daemon.baseUrl).port);
      if (mode === 'parked') {
        // An answered, idle keep-alive connection: it holds the address's one slot and is never junk.
        keepAlive = connect(port, '127.0.0.1');
        keepAlive.on('error', () => undefined);
        await once(keepAlive, 'connect');
        keepAlive.write(`GET /version HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${READ}\r\n\r\n`);
        await once(keepAlive, 'data');
      }
      holder = await wsConnect(daemon.baseUrl.replace(/^http/, 'ws') + `/ws?token=${READ}`);
    });

    after(async () => {
      await holder?.close();
      keepAlive?.destroy();
      assert.equal(await daemon.stop(), 0, daemon.output());
      assert.doesNotMatch(daemon.output(), /Unhandled|ECONNRESET|\n\s+at /);
    });

    for (const refusal of REFUSALS) {
      test(`${refusal.name} (${refusal.status}), reset after the reply: counted, and the daemon serves on`, async () => {
        const before = await socketErrors(daemon);
        const reply = await upgradeThenReset(port, refusal, 'after the reply');
        assert.match(reply, new RegExp(`^HTTP/1\\.1 ${refusal.status} `));
        assert.ok((await errorsAbove(daemon, before)) > before, 'the reset is counted');
        await assertServing(daemon);
      });

      test(`${refusal.name} (${refusal.status}), reset at once: the daemon serves on`, async () => {
        await upgradeThenReset(port, refusal, 'at once');
        await assertServing(daemon);
      });
    }

    test('the WebSocket client that was admitted is still connected and answered', async () => {
      holder.send({ cmd: 'full', dev: 'do', circuit: '1_01' });
      assert.equal((await holder.reply()).dev, 'do');
    });
  });
}
