import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { once } from 'node:events';
import { after, before, describe, test } from 'node:test';
import WebSocket from 'ws';
import { hashPassword } from '../../../src/api/access/password-hash.js';
import { BUNDLE, spawnDaemon, type SpawnedDaemon } from '../../helpers/spawn-daemon.js';
import { FORM, SIMULATED_BUS, bearer, configFile, httpCall } from '../../helpers/http-call.js';

// Panel users through the built daemon: login and logout, the cookie's
// attributes, the scope a session grants, a cookie used from another site,
// the audit entries, a reload that changes a user, a restart that keeps the
// sessions, and a flood of wrong passwords that must not starve others.

const ADMIN_TOKEN = 'admin-token-0123456789abcdef';
// A low scrypt cost keeps the test quick; the daemon takes the cost from the hash.
const ANNA = hashPassword('anna-pass', { n: 1024 });
const BOB = hashPassword('bob-pass', { n: 1024 });
const VERA = hashPassword('vera-pass', { n: 1024 });

function configText(bobScope: string): string {
  return [
    'apis:',
    '  websocket: {enabled: true}',
    '  auth:',
    '    loopback_anonymous: false',
    '    cors_origins: [http://listed.example]',
    '    tokens:',
    `      - {name: ops, token: ${ADMIN_TOKEN}, scope: admin}`,
    '    users:',
    `      - {name: anna, password_hash: "${ANNA}", scope: admin}`,
    `      - {name: bob, password_hash: "${BOB}", scope: ${bobScope}}`,
    `      - {name: vera, password_hash: "${VERA}", scope: read}`,
    SIMULATED_BUS,
  ].join('\n');
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  json: any;
}

/** A request from a chosen loopback address (127.0.0.x), as a client elsewhere on the network would be. */
function call(baseUrl: string, path: string, options: { method?: string; headers?: Record<string, string>; body?: string; from?: string } = {}): Promise<Answer> {
  return new Promise((resolvePromise, reject) => {
    const req = request(baseUrl + path, { method: options.method ?? 'GET', headers: options.headers, agent: false, localAddress: options.from ?? '127.0.0.1' }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolvePromise({ status: res.statusCode!, headers: res.headers, json: text === '' ? undefined : JSON.parse(text) }));
    });
    req.setTimeout(20_000, () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end(options.body);
  });
}

const JSON_TYPE = { 'Content-Type': 'application/json' };

describe('panel users', () => {
  let daemon: SpawnedDaemon;
  let dir: string;
  let file: string;
  const login = (user: string, password: string, from?: string) =>
    call(daemon.baseUrl, '/auth/login', { method: 'POST', headers: FORM, body: new URLSearchParams({ user, password }).toString(), from });
  const cookieOf = (answer: Answer): string => {
    const header = String(answer.headers['set-cookie']);
    return header.split(';')[0]!;
  };
  const auditEntries = async (): Promise<any[]> => (await httpCall(daemon.baseUrl, '/audit?limit=1000', { headers: bearer(ADMIN_TOKEN) })).json;

  before(async () => {
    ({ dir, file } = configFile(configText('write'), 'iogate-users-'));
    daemon = await spawnDaemon(['--config', file], { cwd: dir });
  });

  after(async () => {
    if (daemon.child.exitCode === null && daemon.child.signalCode === null) await daemon.stop();
  });

  test('a login sets an HttpOnly, SameSite=Strict cookie that grants the user\'s scope; logout ends it', async () => {
    const answer = await login('bob', 'bob-pass');
    assert.equal(answer.status, 200, JSON.stringify(answer.json));
    assert.deepEqual(answer.json.result, { user: 'bob', scope: 'write' });
    const header = String(answer.headers['set-cookie']);
    assert.match(header, /^iogate_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=\d+$/);
    assert.doesNotMatch(header, /Secure/, 'plain HTTP: a Secure cookie would not be kept by the browser');
    const cookie = cookieOf(answer);
    assert.equal((await call(daemon.baseUrl, '/rest/do/1_01', { headers: { Cookie: cookie } })).status, 200);
    assert.equal((await call(daemon.baseUrl, '/rest/do/1_01', { method: 'POST', headers: { ...FORM, Cookie: cookie }, body: 'value=1' })).status, 200);
    assert.deepEqual((await call(daemon.baseUrl, '/auth/session', { headers: { Cookie: cookie } })).json.result, { user: 'bob', scope: 'write', users: true });
    assert.equal((await call(daemon.baseUrl, '/audit', { headers: { Cookie: cookie } })).status, 403, 'write is not admin');
    const out = await call(daemon.baseUrl, '/auth/logout', { method: 'POST', headers: { Cookie: cookie } });
    assert.equal(out.status, 200);
    assert.match(String(out.headers['set-cookie']), /^iogate_session=; .*Max-Age=0/);
    assert.equal((await call(daemon.baseUrl, '/rest/do/1_01', { headers: { Cookie: cookie } })).status, 401);
  });

  test('the session opens the WebSocket, and logging out closes it', async () => {
    const cookie = cookieOf(await login('bob', 'bob-pass', '127.0.0.9'));
    const socket = new WebSocket(`${daemon.baseUrl.replace('http', 'ws')}/ws`, { headers: { Cookie: cookie } });
    await once(socket, 'open');
    const closed = once(socket, 'close');
    await call(daemon.baseUrl, '/auth/logout', { method: 'POST', headers: { Cookie: cookie } });
    const [code, reason] = (await closed) as [number, Buffer];
    assert.equal(code, 1008);
    assert.equal(String(reason), 'the session was logged out');
    const refused = new WebSocket(`${daemon.baseUrl.replace('http', 'ws')}/ws`, { headers: { Cookie: cookie } });
    const [, response] = (await once(refused, 'unexpected-response')) as [unknown, { statusCode: number }];
    assert.equal(response.statusCode, 401);
    refused.on('error', () => undefined);
    refused.terminate();
  });

  test('JSON logins work too; a read user may not write; an admin reads the audit log', async () => {
    const vera = await call(daemon.baseUrl, '/auth/login', { method: 'POST', headers: JSON_TYPE, body: JSON.stringify({ user: 'vera', password: 'vera-pass' }) });
    assert.equal(vera.status, 200);
    const write = await call(daemon.baseUrl, '/json/do/1_02', { method: 'POST', headers: { ...JSON_TYPE, Cookie: cookieOf(vera) }, body: '{"value": 1}' });
    assert.equal(write.status, 403);
    assert.equal(write.json.success, false);
    const anna = await login('anna', 'anna-pass');
    assert.equal((await call(daemon.baseUrl, '/audit', { headers: { Cookie: cookieOf(anna) } })).status, 200);
  });

  test('wrong passwords and unknown users get one answer; bad bodies a clear 400', async () => {
    const wrong = await login('anna', 'nope', '127.0.0.5');
    const unknown = await login('nobody', 'nope', '127.0.0.5');
    assert.equal(wrong.status, 401);
    assert.deepEqual(wrong.json, unknown.json);
    assert.equal(wrong.headers['set-cookie'], undefined);
    const bad = await call(daemon.baseUrl, '/auth/login', { method: 'POST', headers: JSON_TYPE, body: '{"user": 1}' });
    assert.equal(bad.status, 400);
    assert.equal(bad.json.success, false);
    assert.equal((await call(daemon.baseUrl, '/auth/login')).status, 405);
  });

  test('a session cookie used from another origin is refused, even one listed for CORS', async () => {
    const cookie = cookieOf(await login('bob', 'bob-pass'));
    for (const origin of ['http://evil.example', 'http://listed.example']) {
      const read = await call(daemon.baseUrl, '/rest/do/1_01', { headers: { Cookie: cookie, Origin: origin } });
      assert.equal(read.status, 403, origin);
      const write = await call(daemon.baseUrl, '/rest/do/1_01', { method: 'POST', headers: { ...FORM, Cookie: cookie, Origin: origin }, body: 'value=0' });
      assert.equal(write.status, 403, origin);
    }
    const host = new URL(daemon.baseUrl).host;
    assert.equal((await call(daemon.baseUrl, '/rest/do/1_01', { method: 'POST', headers: { ...FORM, Cookie: cookie, Origin: `http://${host}` }, body: 'value=0' })).status, 200, 'the panel\'s own site');
    const login2 = await call(daemon.baseUrl, '/auth/login', { method: 'POST', headers: { ...FORM, Origin: 'http://evil.example' }, body: 'user=bob&password=bob-pass' });
    assert.equal(login2.status, 403, 'no login form posted from another site');
  });

  test('logins, failures and logouts are in the audit log with the user, address and interface; no password', async () => {
    const cookie = cookieOf(await login('anna', 'anna-pass', '127.0.0.6'));
    await login('anna', 'secret-wrong-password', '127.0.0.6');
    await call(daemon.baseUrl, '/auth/logout', { method: 'POST', headers: { Cookie: cookie }, from: '127.0.0.6' });
    const entries = await auditEntries();
    const mine = entries.filter((entry) => entry.from === '127.0.0.6');
    assert.deepEqual(
      mine.map((entry) => [entry.who, entry.interface, entry.target, entry.result.split(':')[0]]),
      [
        ['anna', 'http', 'auth/login', 'ok'],
        ['anna', 'http', 'auth/login', 'refused'],
        ['anna', 'http', 'auth/logout', 'ok'],
      ],
    );
    assert.doesNotMatch(JSON.stringify(entries) + daemon.output(), /anna-pass|secret-wrong-password/);
    assert.match(daemon.output(), /login failed for user 'anna' from 127\.0\.0\.6/);
  });

  test('1,000 wrong passwords from one address stay slowed while another client keeps being served', async () => {
    const cookie = cookieOf(await login('bob', 'bob-pass', '127.0.0.3'));
    let served = 0;
    let asked = 0;
    let flooding = true;
    const normal = (async () => {
      while (flooding) {
        asked++;
        const answer = await call(daemon.baseUrl, '/rest/do/1_01', { headers: { Cookie: cookie }, from: '127.0.0.3' });
        if (answer.status === 200) served++;
      }
    })();
    const statuses = new Map<number, number>();
    const started = Date.now();
    for (let round = 0; round < 50; round++) {
      const answers = await Promise.all(Array.from({ length: 20 }, () => login('anna', `guess-${round}`, '127.0.0.2')));
      for (const answer of answers) statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
    }
    const floodMs = Date.now() - started;
    flooding = false;
    await normal;
    const checked = statuses.get(401) ?? 0;
    console.log(`flood: ${JSON.stringify(Object.fromEntries(statuses))} in ${floodMs} ms; normal client ${served}/${asked} served`);
    assert.equal(checked + (statuses.get(429) ?? 0) + (statuses.get(503) ?? 0), 1000);
    assert.ok(checked <= 30, `only the first few guesses were even checked: ${checked}`);
    assert.ok(asked >= 20 && served / asked >= 0.99, `${served}/${asked}`);
    assert.equal((await login('anna', 'anna-pass', '127.0.0.2')).status, 429, 'the address stays slowed, even with the right password');
    assert.equal((await login('bob', 'bob-pass', '127.0.0.4')).status, 200, 'another user from another address logs in');
  });

  test('a changed scope on reload ends that user\'s sessions only', async () => {
    const bob = cookieOf(await login('bob', 'bob-pass'));
    const vera = cookieOf(await login('vera', 'vera-pass'));
    writeFileSync(file, readFileSync(file, 'utf8').replace(/(name: bob, .*scope: )write/, '$1read'));
    const reload = await httpCall(daemon.baseUrl, '/config/reload', { method: 'POST', headers: bearer(ADMIN_TOKEN) });
    assert.equal(reload.status, 200, reload.text);
    assert.equal((await call(daemon.baseUrl, '/rest/do/1_01', { headers: { Cookie: bob } })).status, 401);
    assert.equal((await call(daemon.baseUrl, '/rest/do/1_01', { headers: { Cookie: vera } })).status, 200);
    const relogged = await login('bob', 'bob-pass', '127.0.0.7');
    assert.deepEqual(relogged.json.result, { user: 'bob', scope: 'read' });
    assert.match(daemon.output(), /user 'bob' was removed or their password or scope changed/);
  });

  test('sessions survive a restart; the state file holds no cookie', async () => {
    const cookie = cookieOf(await login('vera', 'vera-pass', '127.0.0.8'));
    assert.equal(await daemon.stop(), 0);
    assert.ok(!readFileSync(join(dir, 'sessions.json'), 'utf8').includes(cookie.split('=')[1]!));
    daemon = await spawnDaemon(['--config', file], { cwd: dir });
    assert.equal((await call(daemon.baseUrl, '/rest/do/1_01', { headers: { Cookie: cookie } })).status, 200);
  });
});

describe('users in the configuration', () => {
  test('--check-config explains a bad hash, a bad name and a duplicate in sentences', () => {
    const { file } = configFile(
      ['apis:', '  auth:', '    users:', '      - {name: anna, password_hash: hunter2, scope: admin}', '      - {name: "bad name", password_hash: "' + ANNA + '"}', '      - {name: bob, password_hash: "' + BOB + '", scope: root}', '      - {name: bob, password_hash: "' + BOB + '"}', SIMULATED_BUS].join('\n'),
      'iogate-users-',
    );
    const run = spawnSync(process.execPath, [BUNDLE, '--check-config', '--config', file], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(run.status, 78, run.stderr);
    assert.match(run.stderr, /password hash of user 'anna' is not a password hash made by "iogate --hash-password"/);
    assert.match(run.stderr, /'bad name' is not a usable user name/);
    assert.match(run.stderr, /one of read, write, admin/);
    assert.match(run.stderr, /the user name 'bob' is listed twice/);
  });

  test('iogate --hash-password reads piped input and prints a hash that logs in', () => {
    const run = spawnSync(process.execPath, [BUNDLE, '--hash-password'], { input: 'p4ss word\n', encoding: 'utf8', timeout: 30_000 });
    assert.equal(run.status, 0, run.stderr);
    assert.match(run.stdout, /^scrypt\$32768\$8\$1\$[A-Za-z0-9_-]+\$[A-Za-z0-9_-]+\n$/);
    const empty = spawnSync(process.execPath, [BUNDLE, '--hash-password'], { input: '', encoding: 'utf8', timeout: 30_000 });
    assert.equal(empty.status, 2);
    assert.match(empty.stderr, /no password given/);
  });
});
