import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { apiGuards } from '../../../src/api/access/guards.js';
import { admitUpgrade } from '../../../src/api/ws/guard.js';
import type { Config } from '../../../src/config/types.js';
import { spawnDaemon, type SpawnedDaemon } from '../../helpers/spawn-daemon.js';
import { SIMULATED_BUS, bearer, configFile, httpCall } from '../../helpers/http-call.js';

// The built-in panel as the built daemon serves it: one HTML page at `/`
// with its own security headers, a CSP whose hashes match the inline code,
// a config key to switch it off, and API replies left exactly as EVOK's.

const TOKEN = 'panel-token-0123456789';

function sha256(text: string): string {
  return `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;
}

function inline(html: string, tag: 'script' | 'style'): string {
  const match = new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`).exec(html);
  assert.ok(match, `the page has an inline <${tag}>`);
  return match[1]!;
}

describe('panel on (the default)', () => {
  let daemon: SpawnedDaemon;
  before(async () => {
    daemon = await spawnDaemon([]);
  });
  after(() => daemon.stop());

  test('GET / answers the page with a same-origin CSP whose hashes match its inline code, and nosniff', async () => {
    const reply = await httpCall(daemon.baseUrl, '/');
    assert.equal(reply.status, 200);
    assert.equal(reply.headers['content-type'], 'text/html; charset=utf-8');
    assert.equal(reply.headers['x-content-type-options'], 'nosniff');
    assert.equal(Number(reply.headers['content-length']), Buffer.byteLength(reply.text));
    assert.match(reply.text, /^<!doctype html>/);
    const csp = String(reply.headers['content-security-policy']);
    const directives = new Map(csp.split(/;\s*/).map((part) => {
      const [name, ...values] = part.split(' ');
      return [name!, values] as const;
    }));
    assert.deepEqual(directives.get('default-src'), ["'self'"]);
    assert.deepEqual(directives.get('connect-src'), ["'self'"]);
    assert.deepEqual(directives.get('script-src'), [sha256(inline(reply.text, 'script'))]);
    assert.deepEqual(directives.get('style-src'), [sha256(inline(reply.text, 'style'))]);
    assert.deepEqual(directives.get('frame-ancestors'), ["'none'"]);
    // Nothing in the page points at another host.
    assert.doesNotMatch(reply.text, /(src|href)=["']?(https?:)?\/\//i);
    assert.doesNotMatch(reply.text, /@import|url\(\s*["']?https?:/i);
  });

  test('HEAD / has the headers and no body; other methods get EVOK\'s error envelope', async () => {
    const head = await httpCall(daemon.baseUrl, '/', { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.text, '');
    assert.ok(head.headers['content-security-policy']);
    const post = await httpCall(daemon.baseUrl, '/', { method: 'POST', body: 'x=1' });
    assert.equal(post.status, 405);
    assert.equal(post.json.success, false);
    assert.deepEqual(Object.keys(post.json.errors), ['MethodNotAllowed']);
  });

  test('API replies keep EVOK\'s headers: no CSP, no nosniff', async () => {
    const reply = await httpCall(daemon.baseUrl, '/rest/do/1_01');
    assert.equal(reply.status, 200);
    assert.equal(reply.headers['content-security-policy'], undefined);
    assert.equal(reply.headers['x-content-type-options'], undefined);
    assert.equal(reply.headers['access-control-allow-origin'], '*');
  });

  test('the start-up summary names the panel', () => {
    assert.match(daemon.output(), /Panel {6}on, http:\/\/127\.0\.0\.1:\d+\//);
  });
});

test('apis.panel.enabled: false turns / into a 404, as in EVOK', async () => {
  const { dir, file } = configFile(`apis:\n  panel:\n    enabled: false\n${SIMULATED_BUS}`, 'iogate-panel-');
  const daemon = await spawnDaemon(['--config', file], { cwd: dir });
  try {
    const reply = await httpCall(daemon.baseUrl, '/');
    assert.equal(reply.status, 404);
    assert.equal(reply.json.success, false);
    assert.equal(reply.headers['content-security-policy'], undefined);
    assert.match(daemon.output(), /Panel {6}off/);
    assert.equal((await httpCall(daemon.baseUrl, '/rest/do/1_01')).status, 200);
  } finally {
    await daemon.stop();
  }
});

test('with tokens the page itself loads without one (it holds no data); the API still asks', async () => {
  const { dir, file } = configFile(
    `apis:\n  auth:\n    loopback_anonymous: false\n    tokens:\n      - {name: panel, token: ${TOKEN}, scope: write}\n${SIMULATED_BUS}`,
    'iogate-panel-',
  );
  const daemon = await spawnDaemon(['--config', file], { cwd: dir });
  try {
    assert.equal((await httpCall(daemon.baseUrl, '/')).status, 200);
    assert.equal((await httpCall(daemon.baseUrl, '/rest/all')).status, 401);
    assert.equal((await httpCall(daemon.baseUrl, '/rest/all', { headers: bearer(TOKEN) })).status, 200);
  } finally {
    await daemon.stop();
  }
});

describe('WebSocket admission of the panel\'s own page', () => {
  const limits = { maxConnections: 256, maxWebSocketClients: 8, maxWebSocketMessageBytes: 65536, headersTimeoutMs: 10_000, requestTimeoutMs: 30_000 };
  const guards = apiGuards({
    auth: { tokens: [{ name: 'panel', token: TOKEN, scope: 'read' }], users: [], sessionIdleMs: 1_800_000, sessionMaxMs: 43_200_000, allowAnonymous: false, loopbackAnonymous: true, allowInsecureTokens: false, corsOrigins: [] },
    limits,
    // The page's own name must pass the Host check (DNS rebinding) first.
    allowedHosts: ['plc.lan'],
  } as unknown as Config['apis']);
  const upgrade = (url: string, headers: Record<string, string>) =>
    ({ url, headers, socket: { remoteAddress: '127.0.0.1' } }) as unknown as IncomingMessage;

  test('a page served by this host and port gets in with a valid token', () => {
    const decision = admitUpgrade(upgrade(`/ws?token=${TOKEN}`, { host: 'plc.lan:8080', origin: 'http://plc.lan:8080' }), guards, 0);
    assert.deepEqual(decision, { admitted: true, scope: 'read' });
  });

  test('without a token, or with a wrong one, it does not (a DNS-rebound page has none)', () => {
    for (const url of ['/ws', '/ws?token=wrong']) {
      const decision = admitUpgrade(upgrade(url, { host: '127.0.0.1:8080', origin: 'http://127.0.0.1:8080' }), guards, 0);
      assert.equal(decision.admitted, false, url);
    }
  });

  test('a page from another origin stays out even with a token', () => {
    const decision = admitUpgrade(upgrade(`/ws?token=${TOKEN}`, { host: '127.0.0.1:8080', origin: 'http://evil.example:8080' }), guards, 0);
    assert.equal(decision.admitted, false);
    if (!decision.admitted) assert.equal(decision.error.status, 403);
  });
});
