import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { hashPassword, parsePasswordHash, verifyPassword, type ParsedHash } from '../../../src/api/access/password-hash.js';
import { SessionStore, sessionCookieOf } from '../../../src/api/access/sessions.js';
import { LoginThrottle } from '../../../src/api/access/login-throttle.js';
import type { AuthUser } from '../../../src/config/types.js';
import { tempDir } from '../../helpers/temp-dir.js';

// Passwords, sessions and the login throttle on their own, with a clock the
// test moves, so expiry is checked to the millisecond without waiting.

const parsed = (text: string): ParsedHash => {
  const hash = parsePasswordHash(text);
  assert.notEqual(typeof hash, 'string', String(hash));
  return hash as ParsedHash;
};

describe('password hashes', () => {
  test('a hash verifies its password and no other; each hash has its own salt', async () => {
    const text = hashPassword('correct horse', { n: 1024 });
    assert.match(text, /^scrypt\$1024\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
    assert.equal(await verifyPassword('correct horse', parsed(text)), true);
    assert.equal(await verifyPassword('correct horsf', parsed(text)), false);
    assert.equal(await verifyPassword('', parsed(text)), false);
    assert.notEqual(hashPassword('correct horse', { n: 1024 }), text);
  });

  test('the default parameters are written into the hash', () => {
    assert.match(hashPassword('x'), /^scrypt\$32768\$8\$1\$/);
  });

  test('malformed hashes are explained, not accepted', () => {
    for (const [text, reason] of [
      ['plain-password', /iogate --hash-password/],
      ['scrypt$1000$8$1$AAAAAAAAAAAAAAAAAAAAAA$' + 'A'.repeat(43), /power of two/],
      ['scrypt$1024$0$1$AAAAAAAAAAAAAAAAAAAAAA$' + 'A'.repeat(43), /block size/],
      ['scrypt$1024$8$99$AAAAAAAAAAAAAAAAAAAAAA$' + 'A'.repeat(43), /parallelism/],
      ['scrypt$1024$8$1$AA$' + 'A'.repeat(43), /salt/],
      ['scrypt$1024$8$1$AAAAAAAAAAAAAAAAAAAAAA$AAAA', /key/],
    ] as const) {
      assert.match(String(parsePasswordHash(text)), reason, text);
    }
  });
});

describe('sessions', () => {
  const anna: AuthUser = { name: 'anna', passwordHash: hashPassword('a', { n: 1024 }), scope: 'admin' };
  const times = { idleMs: 30 * 60_000, maxMs: 12 * 3_600_000 };

  test('a session ends after its idle time, and use keeps it alive', () => {
    let now = 1_000_000;
    const store = new SessionStore({ now: () => now });
    const id = store.create(anna);
    assert.equal(id.length, 43);
    now += times.idleMs - 1;
    assert.equal(store.lookup(id, [anna], times)?.name, 'anna');
    now += times.idleMs;
    assert.equal(store.lookup(id, [anna], times)?.name, 'anna', 'the lookup above counted as use');
    now += times.idleMs + 1;
    assert.equal(store.lookup(id, [anna], times), undefined);
    assert.equal(store.size, 0, 'an expired session is dropped when seen');
  });

  test('a session ends at its absolute cap however busy', () => {
    let now = 0;
    const store = new SessionStore({ now: () => now });
    const id = store.create(anna);
    for (; now < times.maxMs; now += 10 * 60_000) assert.ok(store.lookup(id, [anna], times));
    now = times.maxMs + 1;
    assert.equal(store.lookup(id, [anna], times), undefined);
  });

  test('a changed password or scope, or a removed user, ends the sessions', () => {
    const store = new SessionStore();
    const first = store.create(anna);
    const second = store.create(anna);
    const third = store.create(anna);
    assert.deepEqual(store.endChangedUsers([anna]), []);
    assert.deepEqual(store.endChangedUsers([{ ...anna, scope: 'read' }]), ['anna']);
    assert.equal(store.lookup(first, [anna], times), undefined);
    const again = store.create(anna);
    assert.equal(store.lookup(again, [{ ...anna, passwordHash: hashPassword('b', { n: 1024 }) }], times), undefined, 'seen after a change: ended');
    const last = store.create(anna);
    store.endChangedUsers([]);
    assert.equal(store.lookup(last, [anna], times), undefined);
    assert.equal(store.lookup(second, [anna], times), undefined);
    assert.equal(store.lookup(third, [anna], times), undefined);
  });

  test('logout ends the one session; unknown and malformed ids are nobody', () => {
    const store = new SessionStore();
    const id = store.create(anna);
    const other = store.create(anna);
    assert.equal(store.end(id), true);
    assert.equal(store.end(id), false);
    assert.equal(store.lookup(id, [anna], times), undefined);
    assert.ok(store.lookup(other, [anna], times));
    assert.equal(store.lookup('x'.repeat(43), [anna], times), undefined);
    assert.equal(store.lookup('', [anna], times), undefined);
  });

  test('the count is bounded: the least recently used goes first', () => {
    const store = new SessionStore({ maxSessions: 3 });
    const [a, b, c] = [store.create(anna), store.create(anna), store.create(anna)];
    assert.ok(store.lookup(a, [anna], times));
    store.create(anna);
    assert.equal(store.size, 3);
    assert.equal(store.lookup(b, [anna], times), undefined);
    assert.ok(store.lookup(a, [anna], times));
    assert.ok(store.lookup(c, [anna], times));
  });

  test('sessions survive a restart through the state file, which holds no usable id', async () => {
    const path = join(tempDir('iogate-sessions-'), 'sessions.json');
    const store = new SessionStore({ path });
    const id = store.create(anna);
    const ended = store.create(anna);
    store.end(ended);
    await store.flush();
    const text = readFileSync(path, 'utf8');
    assert.ok(!text.includes(id), 'only a hash of the id is written');
    const restarted = new SessionStore({ path });
    assert.equal(restarted.size, 1);
    assert.equal(restarted.lookup(id, [anna], times)?.name, 'anna');
    assert.equal(restarted.lookup(ended, [anna], times), undefined);
  });

  test('a damaged state file starts with no sessions and says so', () => {
    const dir = tempDir('iogate-sessions-');
    const path = join(dir, 'sessions.json');
    const lines: string[] = [];
    writeFileSync(path, '{"sessions": [{"idHash": "x"}');
    const store = new SessionStore({ path, log: (line) => lines.push(line) });
    assert.equal(store.size, 0);
    assert.match(lines.join('\n'), /not valid JSON/);
  });

  test('the session cookie is found among others', () => {
    assert.equal(sessionCookieOf('a=1; iogate_session=abc; b=2'), 'abc');
    assert.equal(sessionCookieOf('a=1'), undefined);
    assert.equal(sessionCookieOf(undefined), undefined);
  });
});

describe('login throttle', () => {
  test('three failures are free, then the wait doubles up to the cap; success clears it', () => {
    let now = 0;
    const throttle = new LoginThrottle(() => now);
    for (let i = 0; i < 3; i++) throttle.failed('10.0.0.9', 'anna');
    assert.equal(throttle.waitMs('10.0.0.9', 'anna'), 0);
    throttle.failed('10.0.0.9', 'anna');
    assert.equal(throttle.waitMs('10.0.0.9', 'bob'), 1000, 'the address waits, whichever user it tries');
    assert.equal(throttle.waitMs('10.0.0.7', 'anna'), 1000, 'the user waits, from whichever address');
    throttle.failed('10.0.0.9', 'anna');
    assert.equal(throttle.waitMs('10.0.0.9', 'bob'), 2000);
    for (let i = 0; i < 30; i++) throttle.failed('10.0.0.9', 'anna');
    assert.equal(throttle.waitMs('10.0.0.9', 'bob'), 60_000, 'the address cap');
    assert.equal(throttle.waitMs('10.0.0.7', 'anna'), 10_000, 'the lower user cap');
    assert.equal(throttle.waitMs('10.0.0.7', 'bob'), 0, 'others are not slowed');
    now += 60_000;
    assert.equal(throttle.waitMs('10.0.0.9', 'bob'), 0);
    throttle.succeeded('10.0.0.9', 'anna');
    assert.equal(throttle.size, 0);
  });

  test('memory is bounded under a spray of addresses and names', () => {
    const throttle = new LoginThrottle();
    for (let i = 0; i < 20_000; i++) throttle.failed(`10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`, `user${i}`);
    assert.ok(throttle.size <= 2 * 4096, String(throttle.size));
  });
});
