import { request } from 'node:http';
import { ATTACKER_ADDRESSES, LOGIN_PASSWORD, LOGIN_USER, count, runWorkers, type Target } from './common.js';
import type { Random } from './random.js';

// The login form and session cookies: /auth/login hammered with malformed,
// huge and truncated form and JSON bodies, wrong content types, long and
// unicode names and passwords, repeated fields and wrong passwords from
// several addresses; reads and writes with forged cookies; logout without a
// session; now and then a correct login, used, then ended. What fails the run
// (through `fail`): a write a forged cookie made succeed, a 5xx other than
// 503 Busy, or an answer outside EVOK's envelope.

const SESSION_COOKIE = 'iogate_session';

interface Answer {
  status: number;
  body: string;
  setCookie: string[];
}

/** One request from `localAddress`; undefined when no answer came (reset, timeout). */
function send(target: Target, localAddress: string, method: string, path: string, headers: Record<string, string>, body?: Buffer): Promise<Answer | undefined> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port: target.port, localAddress, method, path, headers: { ...headers, ...(body ? { 'Content-Length': String(body.length) } : {}) }, agent: false, timeout: 5000 }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        // Answers are small; only the start is kept.
        if (size < 65_536) chunks.push(chunk);
        size += chunk.length;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), setCookie: res.headers['set-cookie'] ?? [] }));
      res.on('error', () => resolve(undefined));
    });
    req.on('error', () => resolve(undefined));
    req.on('timeout', () => req.destroy());
    req.end(body);
  });
}

function longText(rng: Random): string {
  return rng.weighted<() => string>([
    [3, () => rng.pick(['', 'x', LOGIN_USER, 'admin', 'root', `${LOGIN_USER} `, LOGIN_USER.toUpperCase()])],
    [2, () => 'a'.repeat(rng.int(100, 200_000))],
    [2, () => rng.pick(['ünïcødé', '用户', '🔒🔑', '\u0000', 'a\u202eb', '\uFFFD', '\uD800'])],
    [1, () => rng.bytes(rng.int(1, 200)).toString('latin1')],
  ])();
}

/** Every UTF-8 byte as %XX: unlike encodeURIComponent it takes a lone surrogate too (as U+FFFD, as a browser sends it). */
function percentEncode(text: string): string {
  return [...Buffer.from(text, 'utf8')].map((byte) => `%${byte.toString(16).padStart(2, '0')}`).join('');
}

function loginBody(rng: Random): { contentType: string; body: Buffer } {
  const user = rng.chance(0.5) ? LOGIN_USER : longText(rng);
  // Never the right password here: these logins must all fail.
  const password = rng.chance(0.3) ? `${LOGIN_PASSWORD}x` : longText(rng);
  const form = (pairs: [string, string][]) => Buffer.from(pairs.map(([k, v]) => `${percentEncode(k)}=${percentEncode(v)}`).join('&'));
  const kind = rng.weighted<string>([[3, 'form'], [3, 'json'], [1, 'repeated'], [1, 'truncated'], [1, 'garbage'], [1, 'huge'], [1, 'nested']]);
  const contentType = rng.weighted<string>([
    [6, kind === 'form' || kind === 'repeated' ? 'application/x-www-form-urlencoded' : 'application/json'],
    [1, rng.pick(['text/plain', 'multipart/form-data; boundary=x', 'application/json; charset=utf-16', '', 'application/x-www-form-urlencoded; charset=latin1', 'x'.repeat(5000)])],
  ]);
  const json = Buffer.from(JSON.stringify({ user, password }));
  const body = {
    form: () => form([['user', user], ['password', password]]),
    json: () => json,
    repeated: () => form([['user', user], ['user', LOGIN_USER], ['password', password], ['password', password]]),
    truncated: () => json.subarray(0, rng.int(0, json.length - 1)),
    garbage: () => rng.bytes(rng.length(4096)),
    huge: () => Buffer.alloc(rng.int(65_536, 2_000_000), 0x61),
    nested: () => Buffer.from(rng.pick([`{"user":${'['.repeat(rng.int(1, 5000))}`, `{"user":{"a":1},"password":[1,2]}`, 'null', '[]', `{"user":"${LOGIN_USER}","password":null}`])),
  }[kind]!();
  return { contentType, body };
}

function forgedCookie(rng: Random): string {
  const value = () =>
    rng.weighted<() => string>([
      [3, () => rng.bytes(rng.int(1, 64)).toString('hex')],
      [1, () => rng.bytes(32).toString('base64url')],
      [1, () => 'a'.repeat(rng.int(1000, 7000))],
      [1, () => ''],
      [1, () => rng.bytes(rng.int(1, 40)).toString('latin1').replace(/[\x00-\x1f\x7f;]/g, '_')],  // bytes a client can send in a header
    ])();
  const many = rng.chance(0.2) ? rng.int(2, 200) : 1;
  return Array.from({ length: many }, () => `${rng.chance(0.8) ? SESSION_COOKIE : 'x' + rng.int(0, 99)}=${value()}`).join('; ');
}

export async function loginAttack(target: Target, rng: Random, workers: number, fail: (reason: string) => void): Promise<void> {
  const origin = `http://127.0.0.1:${target.port}`;
  /** Every answer: a 2xx or 4xx in EVOK's envelope; 503 only as Busy (logins at once). */
  const check = (what: string, answer: Answer | undefined, envelope: boolean): Answer | undefined => {
    if (!answer) {
      count(target.counts, 'login.no_answer');
      return undefined;
    }
    count(target.counts, `login.status_${answer.status}`);
    if (answer.status >= 500 && !(answer.status === 503 && /Busy/.test(answer.body))) fail(`login: ${what} answered ${answer.status}: ${answer.body.slice(0, 200)}`);
    else if (answer.status < 200 || (answer.status >= 300 && answer.status < 400)) fail(`login: ${what} answered ${answer.status}`);
    else if (envelope || answer.status >= 400) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(answer.body);
      } catch {
        parsed = undefined;
      }
      const success = (parsed as { success?: unknown } | undefined)?.success;
      if (typeof parsed !== 'object' || parsed === null || (answer.status >= 400 && success !== false)) fail(`login: ${what} answered ${answer.status} outside EVOK's envelope: ${answer.body.slice(0, 200)}`);
    }
    return answer;
  };
  await runWorkers(target, rng, 'login', workers, async (own) => {
    const from = own.pick(ATTACKER_ADDRESSES);
    const kind = own.weighted<string>([[6, 'bad-login'], [3, 'forged-read'], [3, 'forged-write'], [1, 'logout'], [1, 'good-login']]);
    count(target.counts, `login.${kind}`);
    if (kind === 'bad-login') {
      const { contentType, body } = loginBody(own);
      const answer = check('a bad login', await send(target, from, 'POST', '/auth/login', { 'Content-Type': contentType, Origin: origin }, body), true);
      if (answer && answer.status < 300) fail(`login: a wrong login succeeded (${answer.status})`);
    } else if (kind === 'forged-read') {
      check('a read with a forged cookie', await send(target, from, 'GET', own.pick(['/rest/all', '/auth/session', '/rest/do/1_01']), { Cookie: forgedCookie(own) }), false);
    } else if (kind === 'forged-write') {
      const answer = check('a write with a forged cookie', await send(target, from, 'POST', '/rest/do/1_01', { Cookie: forgedCookie(own), Origin: origin, 'Content-Type': 'application/x-www-form-urlencoded' }, Buffer.from(`value=${own.int(0, 1)}`)), true);
      if (answer && answer.status < 300) fail(`login: a write with a forged cookie succeeded (${answer.status})`);
      if (answer && answer.status >= 400) count(target.counts, 'login.forged_refused');
    } else if (kind === 'logout') {
      check('a logout without a session', await send(target, from, 'POST', '/auth/logout', { Origin: origin, ...(own.chance(0.5) ? { Cookie: forgedCookie(own) } : {}) }), true);
    } else {
      const json = own.chance(0.5);
      const body = json ? JSON.stringify({ user: LOGIN_USER, password: LOGIN_PASSWORD }) : `user=${LOGIN_USER}&password=${encodeURIComponent(LOGIN_PASSWORD)}`;
      const answer = check('a correct login', await send(target, from, 'POST', '/auth/login', { 'Content-Type': json ? 'application/json' : 'application/x-www-form-urlencoded', Origin: origin }, Buffer.from(body)), true);
      const session = answer?.setCookie.map((line) => line.split(';')[0]!).find((pair) => pair.startsWith(`${SESSION_COOKIE}=`) && pair.length > SESSION_COOKIE.length + 1);
      if (!answer || answer.status >= 300 || !session) {
        // Slowed (429) or busy (503) while wrong passwords come from the same address: expected.
        count(target.counts, 'login.good_login_refused');
        return;
      }
      count(target.counts, 'login.logged_in');
      check('a read in a session', await send(target, from, 'GET', '/auth/session', { Cookie: session }), true);
      const wrote = check('a write in a session', await send(target, from, 'POST', '/rest/do/1_02', { Cookie: session, Origin: origin, 'Content-Type': 'application/x-www-form-urlencoded' }, Buffer.from(`value=${own.int(0, 1)}`)), true);
      if (wrote && wrote.status < 300) count(target.counts, 'login.session_writes');
      check('a logout', await send(target, from, 'POST', '/auth/logout', { Cookie: session, Origin: origin }), true);
      const after = check('a write after logout', await send(target, from, 'POST', '/rest/do/1_02', { Cookie: session, Origin: origin, 'Content-Type': 'application/x-www-form-urlencoded' }, Buffer.from('value=0')), true);
      if (after && after.status < 300) fail(`login: a write with a cookie after its logout succeeded (${after.status})`);
    }
  });
}
