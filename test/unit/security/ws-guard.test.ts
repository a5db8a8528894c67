import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import { apiGuards } from '../../../src/api/access/guards.js';
import { admitUpgrade, refuseUpgrade } from '../../../src/api/ws/guard.js';
import type { Config } from '../../../src/config/types.js';
import { RequestError } from '../../../src/registry/request-error.js';

// WebSocket upgrade admission: origin, token (header or ?token=), client cap.

const LIMITS = { maxConnections: 256, maxWebSocketClients: 2, maxWebSocketMessageBytes: 65536, headersTimeoutMs: 10_000, requestTimeoutMs: 30_000 };

function guards(auth: Partial<Config['apis']['auth']>) {
  const full = { tokens: [], users: [], sessionIdleMs: 1_800_000, sessionMaxMs: 43_200_000, allowAnonymous: false, loopbackAnonymous: true, allowInsecureTokens: true, corsOrigins: [], ...auth };
  return apiGuards({ auth: full, limits: LIMITS, allowedHosts: [] } as unknown as Config['apis']);
}

function upgrade(url: string, headers: Record<string, string> = {}, remoteAddress = '10.1.2.3'): IncomingMessage {
  return { url, headers, socket: { remoteAddress } } as unknown as IncomingMessage;
}

const TOKENS = [
  { name: 'panel', token: 'ws-read-token', scope: 'read' as const },
  { name: 'scada', token: 'ws-write-token', scope: 'write' as const },
];

test('without tokens any client is admitted with write scope, as EVOK, but pages only from this site', () => {
  const open = guards({});
  assert.deepEqual(admitUpgrade(upgrade('/ws'), open, 0), { admitted: true, scope: 'write' });
  const sameSite = upgrade('/ws', { origin: 'http://localhost', host: 'localhost:80' });
  assert.deepEqual(admitUpgrade(sameSite, open, 0), { admitted: true, scope: 'write' });
  const crossSite = admitUpgrade(upgrade('/ws', { origin: 'http://any.example', host: 'localhost:8080' }), open, 0);
  assert.equal(!crossSite.admitted && crossSite.error.status, 403);
  const listed = guards({ corsOrigins: ['http://any.example'] });
  assert.deepEqual(admitUpgrade(upgrade('/ws', { origin: 'http://any.example', host: 'localhost:8080' }), listed, 0), { admitted: true, scope: 'write' });
});

test('an upgrade naming a foreign Host is refused with 421 (DNS rebinding)', () => {
  const decision = admitUpgrade(upgrade('/ws', { host: 'attacker.example:8080' }), guards({}), 0);
  assert.equal(!decision.admitted && decision.error.status, 421);
  const allowed = guards({});
  assert.equal(admitUpgrade(upgrade('/ws', { host: '127.0.0.1:8080' }), allowed, 0).admitted, true);
});

test('tokens by header or query decide the scope; none or a wrong one is 401', () => {
  const g = guards({ tokens: TOKENS, loopbackAnonymous: false });
  assert.deepEqual(admitUpgrade(upgrade('/ws?token=ws-read-token'), g, 0), { admitted: true, scope: 'read' });
  assert.deepEqual(admitUpgrade(upgrade('/ws', { authorization: 'Bearer ws-write-token' }), g, 0), { admitted: true, scope: 'write' });
  for (const req of [upgrade('/ws'), upgrade('/ws?token=nope'), upgrade('/ws?token=')]) {
    const decision = admitUpgrade(req, g, 0);
    assert.equal(decision.admitted, false);
    assert.equal(!decision.admitted && decision.error.status, 401);
  }
});

test('browser origins must be listed once tokens are on; non-browser clients send none', () => {
  const g = guards({ tokens: TOKENS, corsOrigins: ['https://panel.example'] });
  const foreign = admitUpgrade(upgrade('/ws?token=ws-write-token', { origin: 'https://evil.example' }), g, 0);
  assert.equal(!foreign.admitted && foreign.error.status, 403);
  assert.deepEqual(admitUpgrade(upgrade('/ws?token=ws-read-token', { origin: 'https://panel.example' }), g, 0), { admitted: true, scope: 'read' });
  assert.deepEqual(admitUpgrade(upgrade('/ws', {}, '127.0.0.1'), g, 0), { admitted: true, scope: 'write' }, 'local client, loopback exemption');
});

test('the client cap answers 503', () => {
  const decision = admitUpgrade(upgrade('/ws'), guards({}), 2);
  assert.equal(!decision.admitted && decision.error.status, 503);
});

test('a refusal is a plain HTTP answer with the envelope and, for 401, a Bearer challenge', async () => {
  const socket = new PassThrough();
  let written = '';
  socket.on('data', (chunk: Buffer) => (written += chunk.toString()));
  refuseUpgrade(socket, new RequestError(401, 'Unauthorized', 'no token'));
  await new Promise((resolve) => socket.on('end', resolve));
  const [head, body] = written.split('\r\n\r\n');
  assert.match(head!, /^HTTP\/1\.1 401 Unauthorized\r\n/);
  assert.match(head!, /\r\nWWW-Authenticate: Bearer/);
  assert.match(head!, /\r\nConnection: close/);
  assert.deepEqual(JSON.parse(body!), { success: false, errors: { Unauthorized: 'no token' } });
});
