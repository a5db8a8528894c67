import assert from 'node:assert/strict';
import { hostname } from 'node:os';
import { after, before, describe, test } from 'node:test';
import { WebSocket } from 'ws';
import { sameOrigin } from '../../../src/api/access/origin.js';
import { startGate, STILL_BOARD, type Gate } from '../../helpers/in-process.js';
import { FORM, bearer, httpCall, type Reply } from '../../helpers/http-call.js';

// Cross-site writes and DNS rebinding: what a browser page of another site,
// or one whose name was made to resolve to the controller, gets on the wire.

const TOKEN = 'origin-host-write-token';

function assertEnvelope(reply: Reply, status: number, kind: string): void {
  assert.equal(reply.status, status, reply.text);
  assert.equal(reply.json?.success, false, reply.text);
  assert.ok(kind in reply.json.errors, reply.text);
}

/** The status a WebSocket upgrade gets (101 when it opens). */
function upgradeStatus(url: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, { headers });
    socket.on('open', () => {
      socket.close();
      resolve(101);
    });
    socket.on('unexpected-response', (_req, res) => {
      res.resume();
      resolve(res.statusCode!);
    });
    socket.on('error', reject);
  });
}

/** One write per state-changing interface, each as a browser would post it. */
const WRITES: Array<{ path: string; headers: Record<string, string>; body: string }> = [
  { path: '/rest/do/1_01', headers: FORM, body: 'value=1' },
  { path: '/json/do/1_01', headers: { 'Content-Type': 'application/json' }, body: '{"value":1}' },
  { path: '/bulk', headers: { 'Content-Type': 'application/json' }, body: '{"individual_assignments":[{"dev":"do","circuit":"1_01","value":1}]}' },
  { path: '/rpc', headers: { 'Content-Type': 'application/json' }, body: '{"jsonrpc":"2.0","id":1,"method":"do_set","params":["1_01",1]}' },
];

test('Origin and Host compare with default ports filled in', () => {
  assert.equal(sameOrigin('http://plc', 'plc:80'), true, 'nginx forwards $host:$server_port');
  assert.equal(sameOrigin('http://plc:80', 'plc'), true);
  assert.equal(sameOrigin('https://plc', 'PLC:443'), true);
  assert.equal(sameOrigin('http://[::1]:8080', '[::1]:8080'), true);
  assert.equal(sameOrigin('http://plc', 'plc:8080'), false, 'another port is another origin');
  assert.equal(sameOrigin('https://plc', 'plc:80'), false);
  assert.equal(sameOrigin('null', 'plc'), false);
  assert.equal(sameOrigin('http://plc.evil', 'plc'), false);
});

for (const tokens of [false, true]) {
  describe(`cross-site writes ${tokens ? 'with' : 'without'} tokens`, () => {
    let gate: Gate;
    const auth = tokens ? bearer(TOKEN) : {};
    before(async () => {
      const yaml = `apis:\n  allowed_hosts: [plc.example]\n  auth:\n    cors_origins: [https://panel.example]\n${
        tokens ? `    tokens: [{name: scada, token: ${TOKEN}, scope: write}]\n` : ''
      }${STILL_BOARD.replace('apis:\n', '')}`;
      gate = await startGate(yaml);
    });
    after(() => gate.close());

    test('a write from another site is 403 on REST, JSON, bulk and RPC', async () => {
      for (const { path, headers, body } of WRITES) {
        const reply = await httpCall(gate.baseUrl, path, { method: 'POST', headers: { ...headers, ...auth, Origin: 'http://evil.example' }, body });
        assertEnvelope(reply, 403, 'Forbidden');
        assert.match(reply.json.errors.Forbidden, /cors_origins/);
      }
    });

    test('writes without Origin, from this site (default port too) or from a listed origin pass', async () => {
      const port = new URL(gate.baseUrl).port;
      const variants: Array<Record<string, string>> = [
        {},
        { Origin: gate.baseUrl },
        { Origin: 'http://plc.example', Host: 'plc.example:80' },
        { Origin: 'http://plc.example', Host: 'plc.example' },
        { Origin: `http://localhost:${port}`, Host: `localhost:${port}` },
        { Origin: 'https://panel.example' },
      ];
      for (const extra of variants) {
        for (const { path, headers, body } of WRITES) {
          const reply = await httpCall(gate.baseUrl, path, { method: 'POST', headers: { ...headers, ...auth, ...extra }, body });
          assert.equal(reply.status, 200, `${path} ${JSON.stringify(extra)}: ${reply.text}`);
        }
      }
    });

    test('a WebSocket from another site is refused; from this site or a listed one it opens', async () => {
      const query = tokens ? `?token=${TOKEN}` : '';
      assert.equal(await upgradeStatus(gate.wsUrl + query, { Origin: 'http://evil.example' }), 403);
      assert.equal(await upgradeStatus(gate.wsUrl + query, { Origin: gate.baseUrl }), 101);
      assert.equal(await upgradeStatus(gate.wsUrl + query, { Origin: 'https://panel.example' }), 101);
      assert.equal(await upgradeStatus(gate.wsUrl + query, {}), 101);
    });

    test('reads from another site are not refused by the Origin rule', async () => {
      const reply = await httpCall(gate.baseUrl, '/rest/di/1_01', { headers: { ...auth, Origin: 'http://evil.example' } });
      assert.equal(reply.status, 200, reply.text);
    });
  });
}

describe('Host check against DNS rebinding', () => {
  let gate: Gate;
  before(async () => {
    gate = await startGate(`apis:\n  allowed_hosts: [proxy.example, '[fd00::1]']\n${STILL_BOARD.replace('apis:\n', '')}`);
  });
  after(() => gate.close());

  test('names of this machine and configured names are served', async () => {
    const port = new URL(gate.baseUrl).port;
    const machine = hostname();
    for (const host of [`127.0.0.1:${port}`, `127.0.0.5:${port}`, `localhost:${port}`, `LOCALHOST`, `app.localhost:${port}`, `[::1]:${port}`, machine, `${machine}.local:${port}`, 'proxy.example', 'Proxy.Example:443', '[fd00::1]:8080']) {
      const reply = await httpCall(gate.baseUrl, '/rest/di/1_01', { headers: { Host: host } });
      assert.equal(reply.status, 200, `${host}: ${reply.text}`);
    }
  });

  test('any other name gets 421 in the envelope, for reads, writes and upgrades alike', async () => {
    for (const host of ['attacker.example', `attacker.example:${new URL(gate.baseUrl).port}`, 'localhost.attacker.example', '203.0.113.9']) {
      assertEnvelope(await httpCall(gate.baseUrl, '/rest/di/1_01', { headers: { Host: host } }), 421, 'MisdirectedRequest');
      const write = await httpCall(gate.baseUrl, '/rest/do/1_01', { method: 'POST', headers: { ...FORM, Host: host }, body: 'value=1' });
      assertEnvelope(write, 421, 'MisdirectedRequest');
      assert.equal(await upgradeStatus(gate.wsUrl, { Host: host }), 421);
    }
  });
});
