import assert from 'node:assert/strict';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import WebSocket from 'ws';
import { brainRelayConfig, relayAtSimulator, setBrainInput, startBrainRelaySim } from '../../helpers/brain-relay-sim.js';
import { configFile } from '../../helpers/http-call.js';
import { startHttpsDaemon, type HttpsDaemon } from '../../helpers/https-daemon.js';
import type { SimProcess } from '../../helpers/sim-process.js';
import { connect, deviceIn, type TestClient } from '../../helpers/ws-client.js';

// A `ws` client over WSS straight to iogate's TLS port, as a SCADA program on
// another machine would connect: iogate's own certificate
// (`apis.tls: {self_signed: true}`) pinned as the only CA, a token in the
// upgrade's Authorization header (loopback_anonymous: false). It gets pushes
// of inputs moved at the simulated board, and its `set` switches a relay,
// judged at that board. A client that does not trust the certificate, and
// one without the token, never get a socket.

const TOKEN = 'wss-client-token-0123456789abcdef';
/** Reads the audit log only. */
const ADMIN_TOKEN = 'wss-audit-reader-0123456789abcdef';

interface AuditEntry {
  who: string;
  interface: string;
  target: string;
  result: string;
}

/** GET /audit over HTTPS with the admin token, trusting `ca`. */
function fetchAudit(port: number, ca: Buffer): Promise<AuditEntry[]> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, servername: 'localhost', path: '/audit?limit=1000', ca, agent: false, headers: { Authorization: `Bearer ${ADMIN_TOKEN}` } }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
      res.on('end', () => (res.statusCode === 200 ? resolve(JSON.parse(text) as AuditEntry[]) : reject(new Error(`${res.statusCode} ${text}`))));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('a ws client over WSS on the TLS port', () => {
  let sim: SimProcess;
  let daemon: HttpsDaemon;
  let ca: Buffer;
  let url = '';

  before(async () => {
    sim = await startBrainRelaySim();
    const { dir, file } = configFile(
      brainRelayConfig(sim.tcpPort!, {
        top: ['state_dir: state'],
        apis: ['tls: {self_signed: true}', 'auth:', '  loopback_anonymous: false', '  tokens:', `    - {name: scada, token: ${TOKEN}, scope: write}`, `    - {name: ops, token: ${ADMIN_TOKEN}, scope: admin}`],
      }),
      'iogate-wss-client-',
    );
    daemon = await startHttpsDaemon(file, dir);
    ca = readFileSync(join(dir, 'state', 'tls', 'self-signed-cert.pem'));
    url = `wss://localhost:${daemon.port}/ws`;
  });

  after(async () => {
    await daemon?.stop();
    await sim?.stop();
  });

  test('with the certificate pinned: pushes of a moved input, and a set that switches the relay at the board', async () => {
    const client: TestClient = await connect(url, { ca, headers: { Authorization: `Bearer ${TOKEN}` } });
    try {
      await setBrainInput(sim, 2, true);
      await client.nextMatching((message) => deviceIn(message, 'di', '1_03')?.value === 1, 5000);
      await setBrainInput(sim, 2, false);
      await client.nextMatching((message) => deviceIn(message, 'di', '1_03')?.value === 0, 5000);

      assert.equal(await relayAtSimulator(sim, 1), false);
      client.send({ cmd: 'set', dev: 'relay', circuit: '2_02', value: 1 });
      await client.nextMatching((message) => deviceIn(message, 'ro', '2_02')?.value === 1, 5000);
      assert.equal(await relayAtSimulator(sim, 1), true, 'relay 2_02 on at the board');
      client.send({ cmd: 'set', dev: 'relay', circuit: '2_02', value: 0 });
      await client.nextMatching((message) => deviceIn(message, 'ro', '2_02')?.value === 0, 5000);
      assert.equal(await relayAtSimulator(sim, 1), false, 'relay 2_02 off at the board');
    } finally {
      await client.close();
    }
  });

  test('a client that does not trust the certificate is refused in the handshake', async () => {
    const untrusting = new WebSocket(url, { headers: { Authorization: `Bearer ${TOKEN}` } });
    let opened = false;
    untrusting.on('open', () => (opened = true));
    const [error] = (await once(untrusting, 'error')) as [NodeJS.ErrnoException];
    assert.equal(error.code, 'DEPTH_ZERO_SELF_SIGNED_CERT', error.message);
    assert.equal(opened, false);
  });

  test('a client trusting the certificate but without the token gets 401, no socket', async () => {
    const anonymous = new WebSocket(url, { ca });
    const [, response] = (await once(anonymous, 'unexpected-response')) as [unknown, import('node:http').IncomingMessage];
    assert.equal(response.statusCode, 401);
    response.resume();
    // Ending a socket that never opened reports an error; it is the expected end here.
    anonymous.on('error', () => undefined);
    const closed = new Promise((resolve) => anonymous.once('close', resolve));
    anonymous.terminate();
    await closed;
  });

  test("the audit log has the writes under the token's name, and the refused upgrade", async () => {
    const entries = await fetchAudit(daemon.port, ca);
    const writes = entries.filter((entry) => entry.target.endsWith('/2_02'));
    assert.equal(writes.length, 2, JSON.stringify(entries));
    for (const entry of writes) assert.deepEqual([entry.who, entry.interface, entry.result], ['scada', 'websocket', 'ok']);
    assert.ok(entries.some((entry) => entry.target === '/ws' && entry.result.startsWith('refused: 401')), JSON.stringify(entries));
  });
});
