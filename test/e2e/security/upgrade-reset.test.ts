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

function written(socket: Socket, data: string | Buffer): Promise<void> {
  return new Promise((resolve, reject) => socket.write(data, (error) => (error ? reject(error) : resolve())));
}

/** Sends the upgrade; resets at once, or once the refusal's status line has arrived (returned). */
async function upgradeThenReset(port: number, refusal: Refusal, moment: 'at once' | 'after the reply'): Promise<string> {
  const socket: Socket = connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  await once(socket, 'connect');
  // Written before the reset, which would otherwise turn into a plain close (FIN).
  await written(socket, upgradeRequest(port, refusal));
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

    /** Until a pong frame arrives (frames from the server are unmasked; pushes may come first). */
    async function pong(socket: Socket): Promise<void> {
      let bytes = Buffer.alloc(0);
      for (;;) {
        while (bytes.length >= 2) {
          const short = bytes[1]! & 0x7f;
          const [head, length] = short === 126 ? [4, bytes.length >= 4 ? bytes.readUInt16BE(2) : Infinity] : short === 127 ? [10, bytes.length >= 10 ? Number(bytes.readBigUInt64BE(2)) : Infinity] : [2, short];
          if (bytes.length < head + length) break;
          if ((bytes[0]! & 0x0f) === 0x0a) return;
          bytes = bytes.subarray(head + length);
        }
        bytes = Buffer.concat([bytes, (await once(socket, 'data'))[0] as Buffer]);
      }
    }

    /** A WebSocket admitted with the write token, as a raw socket, its handshake answer read. */
    async function rawWebSocket(): Promise<Socket> {
      const socket = connect(port, '127.0.0.1');
      socket.on('error', () => undefined);
      await once(socket, 'connect');
      await written(socket, upgradeRequest(port, { name: 'admitted', status: 101, path: `/ws?token=${WRITE}`, headers: {} }));
      let reply = '';
      while (!reply.includes('\r\n\r\n')) reply += ((await once(socket, 'data'))[0] as Buffer).toString('latin1');
      assert.match(reply, /^HTTP\/1\.1 101 /);
      return socket;
    }

    test('an admitted WebSocket client that resets mid-frame: the daemon serves on', async () => {
      await holder.close();
      const socket = await rawWebSocket();
      // A masked text frame announcing 100 bytes, of which 10 arrive.
      await written(socket, Buffer.concat([Buffer.from([0x81, 0x80 | 100, 1, 2, 3, 4]), Buffer.alloc(10, 0x20)]));
      socket.resetAndDestroy();
      await once(socket, 'close');
      await assertServing(daemon);
    });

    test('an admitted WebSocket client that resets once all it sent was read: counted, and the daemon serves on', async () => {
      const before = await socketErrors(daemon);
      const socket = await rawWebSocket();
      // A ping; its pong says the daemon has read everything, so the reset meets an empty queue
      // (with data still unread, Linux reports the reset to the reader as a plain end of stream).
      await written(socket, Buffer.from([0x89, 0x80, 1, 2, 3, 4]));
      await pong(socket);
      socket.resetAndDestroy();
      await once(socket, 'close');
      assert.ok((await errorsAbove(daemon, before)) > before, 'the reset is counted');
      await assertServing(daemon);
    });

    const parseErrors = async (): Promise<number> =>
      Number(/^iogate_http_socket_errors_total\{code="HPE"\} (\d+)$/m.exec((await httpCall(daemon.baseUrl, '/metrics', { headers: bearer(READ) })).text)?.[1]);

    /** Writes `request` raw, and resolves with all the daemon answered once it closed the connection. */
    async function rawReply(request: string): Promise<{ reply: string; body: unknown }> {
      const socket = connect(port, '127.0.0.1');
      socket.on('error', () => undefined);
      socket.setEncoding('latin1');
      socket.write(request);
      let reply = '';
      socket.on('data', (chunk: string) => (reply += chunk));
      await once(socket, 'close');
      return { reply, body: JSON.parse(reply.slice(reply.indexOf('\r\n\r\n') + 4)) };
    }

    test('a request HTTP cannot parse is answered 400 and counted as HPE', async () => {
      const before = await parseErrors();
      const { reply, body } = await rawReply('G\0T / HTTP/1.1\r\n\r\n');
      assert.match(reply, /^HTTP\/1\.1 400 /);
      // In EVOK's envelope, as every other error: node:http's own answer has no body.
      assert.deepEqual(body, { success: false, errors: { BadRequest: 'the request is not valid HTTP' } });
      assert.equal(await parseErrors(), before + 1);
      await assertServing(daemon);
    });

    test('headers over the size limit are answered 431 in the envelope and counted as HPE', async () => {
      const before = await parseErrors();
      const { reply, body } = await rawReply(`GET /rest/all HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: ${'a'.repeat(20_000)}\r\n\r\n`);
      assert.match(reply, /^HTTP\/1\.1 431 /);
      assert.match(reply, /\r\nContent-Type: application\/json\r\n/);
      assert.equal((body as { success?: unknown }).success, false);
      assert.equal(await parseErrors(), before + 1);
      await assertServing(daemon);
    });

    // After a refusal nothing read the connection: a client that went on
    // writing filled its buffers, and the connection stayed open (FIN-WAIT-2,
    // its input held) for as long as the client kept it, its FIN never read.
    const openConnections = async (): Promise<number> =>
      Number(/^iogate_http_connections (\d+)$/m.exec((await httpCall(daemon.baseUrl, '/metrics', { headers: bearer(READ) })).text)?.[1]);

    /** Sends the upgrade, waits for the refusal, then writes on; `then` says whether it half-closes after 512 KB or keeps writing. Resolves with the refusal once the daemon closed the connection. */
    async function refusedThenWriting(refusal: Refusal, then: 'half-close' | 'keep writing'): Promise<string> {
      // Half-open allowed: the daemon's FIN must not end the client's side for it.
      const socket: Socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
      socket.on('error', () => undefined);
      await once(socket, 'connect');
      await written(socket, upgradeRequest(port, refusal));
      socket.setEncoding('latin1');
      let reply = '';
      socket.on('data', (chunk: string) => (reply += chunk));
      // Not once(): that rejects on the 'error' (EPIPE, a reset) a cut-off brings.
      const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
      while (!reply.includes('\r\n')) await once(socket, 'data');
      const chunk = Buffer.alloc(64 * 1024, 0x41);
      if (then === 'half-close') {
        for (let i = 0; i < 8; i++) socket.write(chunk);
        socket.end();
      } else {
        const writing = setInterval(() => {
          try {
            if (socket.writable) socket.write(chunk);
          } catch {
            // The daemon cut the connection off (EPIPE): what the test waits for.
          }
        }, 20);
        void closed.then(() => clearInterval(writing));
      }
      await closed;
      return reply;
    }

    for (const then of ['half-close', 'keep writing'] as const) {
      test(`refused upgrades whose client then writes on and ${then === 'half-close' ? 'closes its side' : 'never closes'}: the daemon closes them`, async () => {
        const before = await openConnections();
        // Both ways to a refusal: the path (404) and the guards (403).
        const replies = await Promise.all([REFUSALS[0]!, REFUSALS[1]!].map((refusal) => refusedThenWriting(refusal, then)));
        assert.match(replies[0]!, /^HTTP\/1\.1 404 /);
        assert.match(replies[1]!, /^HTTP\/1\.1 403 /);
        for (let i = 0; i < 200 && (await openConnections()) > before; i++) await new Promise((resolve) => setTimeout(resolve, 10));
        assert.equal(await openConnections(), before, 'the refused connections no longer hold a slot');
        await assertServing(daemon);
      });
    }
  });
}
