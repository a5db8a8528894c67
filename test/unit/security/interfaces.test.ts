import assert from 'node:assert/strict';
import { once } from 'node:events';
import { after, before, describe, test } from 'node:test';
import WebSocket from 'ws';
import { spawnDaemon, type SpawnedDaemon } from '../../helpers/spawn-daemon.js';
import { SIMULATED_BUS, bearer, configFile, httpCall } from '../../helpers/http-call.js';

// The same token rules on WebSocket, bulk and JSON-RPC, through real clients
// against the built daemon. Loopback exemption off, so the local test client
// is treated like one from the network.

const READ = 'iface-read-token';
const WRITE = 'iface-write-token';
const PANEL = 'https://panel.example';

let daemon: SpawnedDaemon;
let wsUrl: string;

before(async () => {
  const { dir, file } = configFile(
    [
      'apis:',
      '  websocket: {enabled: true}',
      '  auth:',
      '    loopback_anonymous: false',
      `    cors_origins: [${PANEL}]`,
      '    tokens:',
      `      - {name: panel, token: ${READ}, scope: read}`,
      `      - {name: scada, token: ${WRITE}, scope: write}`,
      '  limits: {max_websocket_clients: 3, max_websocket_message_bytes: 1024}',
      SIMULATED_BUS,
    ].join('\n'),
  );
  daemon = await spawnDaemon(['--config', file], { cwd: dir });
  wsUrl = daemon.baseUrl.replace(/^http/, 'ws') + '/ws';
});

after(async () => {
  assert.equal(await daemon.stop(), 0);
});

/** Resolves with the open socket, or rejects with the HTTP status the upgrade was refused with. */
async function openWs(url: string, options: WebSocket.ClientOptions = {}): Promise<WebSocket> {
  const ws = new WebSocket(url, options);
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(ws));
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
      res.on('end', () => reject(Object.assign(new Error(`refused ${res.statusCode}`), { status: res.statusCode, headers: res.headers, body })));
    });
    ws.once('error', reject);
  });
}

/** Closes and waits for the handshake, so the server has let go of the client before the next test counts clients. */
async function closeWs(ws: WebSocket): Promise<void> {
  const closed = once(ws, 'close');
  ws.close();
  await closed;
}

function nextMessage(ws: WebSocket): Promise<any> {
  return once(ws, 'message').then(([data]) => JSON.parse(String(data)));
}

async function doValue(circuit: string): Promise<number> {
  return (await httpCall(daemon.baseUrl, `/rest/do/${circuit}`, { headers: bearer(READ) })).json.value;
}

describe('WebSocket', () => {
  test('an upgrade without a valid token is refused with 401 and the envelope', async () => {
    for (const url of [wsUrl, `${wsUrl}?token=wrong`]) {
      await assert.rejects(openWs(url), (error: any) => {
        assert.equal(error.status, 401);
        assert.match(String(error.headers['www-authenticate']), /^Bearer/);
        assert.deepEqual(Object.keys(JSON.parse(error.body).errors), ['Unauthorized']);
        return true;
      });
    }
  });

  test('a page from an unlisted origin is refused with 403 even with a token', async () => {
    await assert.rejects(openWs(`${wsUrl}?token=${WRITE}`, { origin: 'https://evil.example' }), { status: 403 });
    const listed = await openWs(`${wsUrl}?token=${READ}`, { origin: PANEL });
    await closeWs(listed);
  });

  test('a read token may subscribe and list, but set is answered with Forbidden (errors opted in) and changes nothing', async () => {
    const ws = await openWs(`${wsUrl}?token=${READ}&errors=1`);
    try {
      ws.send(JSON.stringify({ cmd: 'all' }));
      const all = await nextMessage(ws);
      assert.ok(Array.isArray(all) && all.some((device: any) => device.dev === 'do'));
      const before = await doValue('1_01');
      ws.send(JSON.stringify({ cmd: 'set', dev: 'do', circuit: '1_01', value: before ? 0 : 1 }));
      const reply = await nextMessage(ws);
      assert.equal(reply.success, false);
      assert.ok('Forbidden' in reply.errors);
      assert.equal(await doValue('1_01'), before);
      ws.send(JSON.stringify({ cmd: 'filter', devices: ['do'] }));
      ws.send(JSON.stringify({ cmd: 'full', dev: 'do', circuit: '1_01' }));
      assert.equal((await nextMessage(ws)).circuit, '1_01', 'the socket stays usable');
    } finally {
      await closeWs(ws);
    }
  });

  test('a write token (Authorization header) may set', async () => {
    const ws = await openWs(wsUrl, { headers: bearer(WRITE) });
    try {
      ws.send(JSON.stringify({ cmd: 'set', dev: 'do', circuit: '1_02', value: 1 }));
      for (let i = 0; i < 100 && (await doValue('1_02')) !== 1; i++) await new Promise((resolve) => setTimeout(resolve, 10));
      assert.equal(await doValue('1_02'), 1);
    } finally {
      await closeWs(ws);
    }
  });

  test('a message over max_websocket_message_bytes closes the socket with 1009', async () => {
    const ws = await openWs(`${wsUrl}?token=${READ}`);
    const closed = once(ws, 'close');
    ws.send(JSON.stringify({ cmd: 'all', pad: 'x'.repeat(2000) }));
    const [code] = (await closed) as [number];
    assert.equal(code, 1009);
  });

  test('clients over max_websocket_clients are refused with 503', async () => {
    const open = await Promise.all([1, 2, 3].map(() => openWs(`${wsUrl}?token=${READ}`)));
    try {
      await assert.rejects(openWs(`${wsUrl}?token=${READ}`), { status: 503 });
    } finally {
      await Promise.all(open.map(closeWs));
    }
  });
});

describe('bulk', () => {
  const bulk = (body: unknown, token?: string) =>
    httpCall(daemon.baseUrl, '/bulk', { method: 'POST', headers: { 'Content-Type': 'application/json', ...(token ? bearer(token) : {}) }, body: JSON.stringify(body) });
  const query = { group_queries: [{ device_types: ['do'] }] };
  const assignment = { individual_assignments: [{ device_type: 'do', device_circuit: '1_03', assigned_values: { value: 1 } }] };

  test('no token: 401', async () => {
    assert.equal((await bulk(query)).status, 401);
  });

  test('a read token may query; any assignment refuses the whole request with 403', async () => {
    assert.equal((await bulk(query, READ)).status, 200);
    const before = await doValue('1_03');
    const mixed = await bulk({ ...query, ...assignment }, READ);
    assert.equal(mixed.status, 403);
    assert.ok('Forbidden' in mixed.json.errors);
    assert.equal(await doValue('1_03'), before);
  });

  test('a write token may assign', async () => {
    const reply = await bulk(assignment, WRITE);
    assert.equal(reply.status, 200, reply.text);
    assert.equal(await doValue('1_03'), 1);
  });
});

describe('JSON-RPC', () => {
  const rpc = (body: unknown, token?: string) =>
    httpCall(daemon.baseUrl, '/rpc', { method: 'POST', headers: { 'Content-Type': 'application/json', ...(token ? bearer(token) : {}) }, body: JSON.stringify(body) });

  test('no token: 401', async () => {
    assert.equal((await rpc({ jsonrpc: '2.0', id: 1, method: 'input_get', params: ['1_01'] })).status, 401);
  });

  test('a read token may call getters; a batch with a setter is refused whole with 403', async () => {
    const getter = await rpc({ jsonrpc: '2.0', id: 1, method: 'input_get', params: ['1_01'] }, READ);
    assert.equal(getter.status, 200);
    assert.ok(Array.isArray(getter.json.result));
    const before = await doValue('1_04');
    const batch = await rpc(
      [
        { jsonrpc: '2.0', id: 1, method: 'output_get', params: ['1_04'] },
        { jsonrpc: '2.0', id: 2, method: 'output_set', params: ['1_04', before ? 0 : 1] },
      ],
      READ,
    );
    assert.equal(batch.status, 403);
    assert.ok('Forbidden' in batch.json.errors);
    assert.equal(await doValue('1_04'), before);
  });

  test('a write token may call setters', async () => {
    const reply = await rpc({ jsonrpc: '2.0', id: 3, method: 'output_set', params: ['1_04', 1] }, WRITE);
    assert.equal(reply.status, 200);
    assert.equal(reply.json.result, 1);
  });
});

test('on SIGTERM WebSocket clients are told 1001 Going Away', async () => {
  const { dir, file } = configFile(`apis:\n  websocket: {enabled: true}\n${SIMULATED_BUS}`);
  const own = await spawnDaemon(['--config', file], { cwd: dir });
  const ws = await openWs(own.baseUrl.replace(/^http/, 'ws') + '/ws');
  const closed = once(ws, 'close');
  assert.equal(await own.stop(), 0);
  const [code] = (await closed) as [number];
  assert.equal(code, 1001);
});
