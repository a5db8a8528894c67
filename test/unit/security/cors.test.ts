import assert from 'node:assert/strict';
import { test } from 'node:test';
import { spawnDaemon } from '../../helpers/spawn-daemon.js';
import { SIMULATED_BUS, bearer, configFile, httpCall } from '../../helpers/http-call.js';

// CORS answers: EVOK's `*` while there is no authentication, named origins
// (echoed, with Vary: Origin) once there is.

const TOKEN = 'cors-test-token';

async function withDaemon(yaml: string, body: (baseUrl: string) => Promise<void>): Promise<void> {
  const { dir, file } = configFile(yaml);
  const daemon = await spawnDaemon(['--config', file], { cwd: dir });
  try {
    await body(daemon.baseUrl);
  } finally {
    assert.equal(await daemon.stop(), 0);
  }
}

test('without tokens every reply allows any origin, as EVOK', () =>
  withDaemon(SIMULATED_BUS, async (baseUrl) => {
    for (const origin of [undefined, 'http://a.example']) {
      const headers: Record<string, string> = origin ? { Origin: origin } : {};
      const reply = await httpCall(baseUrl, '/rest/di/1_01', { headers });
      assert.equal(reply.headers['access-control-allow-origin'], '*');
      assert.match(String(reply.headers['access-control-allow-headers']), /authorization/);
    }
    const preflight = await httpCall(baseUrl, '/json/do/1_01', { method: 'OPTIONS', headers: { Origin: 'http://a.example' } });
    assert.equal(preflight.status, 204);
    assert.equal(preflight.headers['access-control-allow-origin'], '*');
  }));

test('with tokens and no cors_origins, browsers get no CORS grant', () =>
  withDaemon(`apis:\n  auth:\n    tokens: [{name: a, token: ${TOKEN}}]\n${SIMULATED_BUS}`, async (baseUrl) => {
    const reply = await httpCall(baseUrl, '/rest/di/1_01', { headers: { ...bearer(TOKEN), Origin: 'http://a.example' } });
    assert.equal(reply.status, 200);
    assert.equal(reply.headers['access-control-allow-origin'], undefined);
    assert.equal(reply.headers.vary, 'Origin');
    const preflight = await httpCall(baseUrl, '/rest/di/1_01', { method: 'OPTIONS', headers: { Origin: 'http://a.example' } });
    assert.equal(preflight.headers['access-control-allow-origin'], undefined);
  }));

test('listed origins are echoed with Vary: Origin; others are not', () =>
  withDaemon(
    `apis:\n  auth:\n    tokens: [{name: a, token: ${TOKEN}}]\n    cors_origins: [https://Panel.example/, http://10.0.0.5:1880]\n${SIMULATED_BUS}`,
    async (baseUrl) => {
      for (const origin of ['https://panel.example', 'http://10.0.0.5:1880']) {
        const reply = await httpCall(baseUrl, '/rest/di/1_01', { headers: { ...bearer(TOKEN), Origin: origin } });
        assert.equal(reply.headers['access-control-allow-origin'], origin);
        assert.equal(reply.headers.vary, 'Origin');
        assert.match(String(reply.headers['access-control-allow-methods']), /POST/);
      }
      const preflight = await httpCall(baseUrl, '/json/do/1_01', { method: 'OPTIONS', headers: { Origin: 'https://panel.example' } });
      assert.equal(preflight.headers['access-control-allow-origin'], 'https://panel.example');
      const other = await httpCall(baseUrl, '/rest/di/1_01', { headers: { ...bearer(TOKEN), Origin: 'https://panel.example.evil' } });
      assert.equal(other.headers['access-control-allow-origin'], undefined);
      const anonymous = await httpCall(baseUrl, '/rest/di/1_01', { headers: { Origin: 'https://panel.example' } });
      assert.equal(anonymous.status, 200, 'loopback client from a listed origin');
      assert.equal(anonymous.headers['access-control-allow-origin'], 'https://panel.example', 'anonymous loopback replies get the same CORS answer');
    },
  ));
