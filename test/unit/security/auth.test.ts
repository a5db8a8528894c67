import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { spawnDaemon, type SpawnedDaemon } from '../../helpers/spawn-daemon.js';
import { FORM, SIMULATED_BUS, bearer, configFile, httpCall, type Reply } from '../../helpers/http-call.js';

// Token scopes through real HTTP against the built daemon. The daemon listens
// on 127.0.0.1, so "a client from the network" is simulated by turning the
// loopback exemption off.

const READ_TOKEN = 'read-token-0123456789abcdef';
const WRITE_TOKEN = 'write-token-fedcba9876543210';
const FILE_TOKEN = 'file-token-from-disk-42';

function assertEnvelope(reply: Reply, status: number, kind: string): void {
  assert.equal(reply.status, status, reply.text);
  assert.equal(reply.json.success, false);
  assert.deepEqual(Object.keys(reply.json.errors), [kind]);
  assert.equal(typeof reply.json.errors[kind], 'string');
}

describe('tokens, loopback exemption off', () => {
  let daemon: SpawnedDaemon;
  const get = (path: string, headers: Record<string, string> = {}) => httpCall(daemon.baseUrl, path, { headers });
  const post = (path: string, headers: Record<string, string> = {}) =>
    httpCall(daemon.baseUrl, path, { method: 'POST', headers: { ...FORM, ...headers }, body: 'value=1' });

  before(async () => {
    const { dir, file } = configFile(
      [
        'apis:',
        '  auth:',
        '    loopback_anonymous: false',
        '    tokens:',
        `      - {name: panel, token: ${READ_TOKEN}, scope: read}`,
        `      - {name: scada, token: ${WRITE_TOKEN}, scope: write}`,
        '      - {name: filed, token_file: filed.token, scope: write}',
        SIMULATED_BUS,
      ].join('\n'),
    );
    writeFileSync(join(dir, 'filed.token'), `${FILE_TOKEN}\n`);
    daemon = await spawnDaemon(['--config', file], { cwd: dir });
  });

  after(async () => {
    assert.equal(await daemon.stop(), 0);
  });

  test('no token: 401 with a Bearer challenge and the EVOK envelope, on every route', async () => {
    for (const path of ['/rest/di/1_01', '/json/all', '/rest/all', '/version', '/metrics', '/no/such/thing']) {
      const reply = await get(path);
      assertEnvelope(reply, 401, 'Unauthorized');
      assert.match(String(reply.headers['www-authenticate']), /^Bearer/);
    }
    assertEnvelope(await post('/rest/do/1_01'), 401, 'Unauthorized');
  });

  test('a wrong or malformed token is refused like a missing one', async () => {
    assertEnvelope(await get('/rest/di/1_01', bearer('not-a-token')), 401, 'Unauthorized');
    assertEnvelope(await get('/rest/di/1_01', bearer(READ_TOKEN.slice(0, -1))), 401, 'Unauthorized');
    assertEnvelope(await get('/rest/di/1_01', bearer(READ_TOKEN + 'x')), 401, 'Unauthorized');
    assertEnvelope(await get('/rest/di/1_01', { Authorization: `Basic ${Buffer.from(`x:${READ_TOKEN}`).toString('base64')}` }), 401, 'Unauthorized');
    assertEnvelope(await get('/rest/di/1_01', { Authorization: 'Bearer' }), 401, 'Unauthorized');
  });

  test('the query-string token is for WebSocket upgrades only', async () => {
    assertEnvelope(await get(`/rest/di/1_01?token=${READ_TOKEN}`), 401, 'Unauthorized');
  });

  test('read scope: GETs succeed, writes get 403', async () => {
    const reading = await get('/rest/di/1_01', bearer(READ_TOKEN));
    assert.equal(reading.status, 200);
    assert.equal(reading.json.circuit, '1_01');
    assert.equal((await get('/version', bearer(READ_TOKEN))).status, 200);
    assert.equal((await get('/metrics', bearer(READ_TOKEN))).status, 200);
    assert.equal((await get('/json/all', { Authorization: `bearer  ${READ_TOKEN}` })).status, 200, 'scheme is case-insensitive');
    assertEnvelope(await post('/rest/do/1_01', bearer(READ_TOKEN)), 403, 'Forbidden');
    assertEnvelope(await post('/rest/all', bearer(READ_TOKEN)), 403, 'Forbidden');
  });

  test('write scope: writes succeed; a token from token_file works the same', async () => {
    for (const token of [WRITE_TOKEN, FILE_TOKEN]) {
      const reply = await post('/rest/do/1_01', bearer(token));
      assert.equal(reply.status, 200, reply.text);
      assert.equal(reply.json.success, true);
      assert.equal((await get('/rest/do/1_01', bearer(token))).json.value, 1);
    }
  });

  test('a refused write changes nothing', async () => {
    await httpCall(daemon.baseUrl, '/rest/do/1_02', { method: 'POST', headers: { ...FORM, ...bearer(WRITE_TOKEN) }, body: 'value=0' });
    await post('/rest/do/1_02', bearer(READ_TOKEN));
    await post('/rest/do/1_02');
    assert.equal((await get('/rest/do/1_02', bearer(READ_TOKEN))).json.value, 0);
  });

  test('preflight OPTIONS needs no token (browsers never send one)', async () => {
    const reply = await httpCall(daemon.baseUrl, '/rest/do/1_01', { method: 'OPTIONS' });
    assert.equal(reply.status, 204);
  });

  test('tokens never appear in the log', () => {
    for (const token of [READ_TOKEN, WRITE_TOKEN, FILE_TOKEN]) assert.ok(!daemon.output().includes(token));
  });
});

describe('tokens with the default loopback exemption', () => {
  let daemon: SpawnedDaemon;

  before(async () => {
    const { dir, file } = configFile(
      [
        'apis:',
        '  auth:',
        `    tokens: [{name: scada, token: ${WRITE_TOKEN}, scope: write}]`,
        '    cors_origins: [https://panel.example]',
        SIMULATED_BUS,
      ].join('\n'),
    );
    daemon = await spawnDaemon(['--config', file], { cwd: dir });
  });

  after(async () => {
    assert.equal(await daemon.stop(), 0);
  });

  test('local clients without a token keep working as with EVOK', async () => {
    assert.equal((await httpCall(daemon.baseUrl, '/rest/di/1_01')).status, 200);
    const write = await httpCall(daemon.baseUrl, '/rest/do/1_03', { method: 'POST', headers: FORM, body: 'value=1' });
    assert.equal(write.status, 200, write.text);
  });

  test('a presented token must still be valid', async () => {
    assertEnvelope(await httpCall(daemon.baseUrl, '/rest/di/1_01', { headers: bearer('stale') }), 401, 'Unauthorized');
  });

  test('a browser page from an unlisted origin gets no loopback exemption', async () => {
    const headers = { ...FORM, Origin: 'http://evil.example' };
    assertEnvelope(await httpCall(daemon.baseUrl, '/rest/di/1_01', { headers }), 401, 'Unauthorized');
    // A write from another site is refused before credentials are even looked at.
    assertEnvelope(await httpCall(daemon.baseUrl, '/rest/do/1_03', { method: 'POST', headers, body: 'value=0' }), 403, 'Forbidden');
    const listed = await httpCall(daemon.baseUrl, '/rest/do/1_03', { method: 'POST', headers: { ...FORM, Origin: 'https://panel.example' }, body: 'value=0' });
    assert.equal(listed.status, 200, listed.text);
  });
});

describe('no tokens configured: EVOK-compatible', () => {
  let daemon: SpawnedDaemon;

  before(async () => {
    const { dir, file } = configFile(SIMULATED_BUS);
    daemon = await spawnDaemon(['--config', file], { cwd: dir });
  });

  after(async () => {
    assert.equal(await daemon.stop(), 0);
  });

  test('reads and writes need no token; reads from any origin, writes from this site or none', async () => {
    const read = await httpCall(daemon.baseUrl, '/rest/di/1_01', { headers: { Origin: 'http://anywhere.example' } });
    assert.equal(read.status, 200);
    assert.equal(read.headers['access-control-allow-origin'], '*');
    const write = await httpCall(daemon.baseUrl, '/rest/do/1_04', { method: 'POST', headers: FORM, body: 'value=1' });
    assert.equal(write.status, 200, write.text);
    const sameSite = await httpCall(daemon.baseUrl, '/rest/do/1_04', { method: 'POST', headers: { ...FORM, Origin: daemon.baseUrl }, body: 'value=1' });
    assert.equal(sameSite.status, 200, sameSite.text);
    const crossSite = await httpCall(daemon.baseUrl, '/rest/do/1_04', { method: 'POST', headers: { ...FORM, Origin: 'http://anywhere.example' }, body: 'value=1' });
    assertEnvelope(crossSite, 403, 'Forbidden');
  });
});
