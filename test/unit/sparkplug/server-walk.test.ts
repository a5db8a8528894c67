import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FIRST_RETRY_MS, MAX_RETRY_MS, ServerWalk } from '../../../src/api/sparkplug/server-walk.js';

// The edge node's walk over its servers: in order, a short wait after a
// session ended, a doubling wait after each whole round of failed attempts.

const servers = ['mqtt://a:1883', 'mqtt://b:1883', 'mqtt://c:1883'].map((url) => ({ url }));

test('servers are walked in order and wrap around', () => {
  const walk = new ServerWalk(servers);
  const seen = [walk.current.server.url];
  for (let i = 0; i < 4; i++) {
    walk.advance(true);
    seen.push(walk.current.server.url);
  }
  assert.deepEqual(seen, ['mqtt://a:1883', 'mqtt://b:1883', 'mqtt://c:1883', 'mqtt://a:1883', 'mqtt://b:1883']);
  assert.equal(walk.current.index, 1);
});

test('the wait doubles after each whole round of failures, up to the cap; a session resets it', () => {
  const walk = new ServerWalk(servers);
  const waits: number[] = [];
  for (let i = 0; i < 3 * 8; i++) waits.push(walk.advance(false));
  // Within a round the wait stays; the last attempt of a round doubles it.
  assert.deepEqual(waits.slice(0, 6), [FIRST_RETRY_MS, FIRST_RETRY_MS, FIRST_RETRY_MS * 2, FIRST_RETRY_MS * 2, FIRST_RETRY_MS * 2, FIRST_RETRY_MS * 4]);
  assert.equal(Math.max(...waits), MAX_RETRY_MS);
  assert.equal(walk.advance(true), FIRST_RETRY_MS, 'after a session: the next server at once');
  assert.equal(walk.advance(false), FIRST_RETRY_MS, 'and the failures count from zero again');
});

test('a server that refused MQTT 5 is spoken to in 3.1.1 from then on, the others not', () => {
  const walk = new ServerWalk(servers);
  assert.equal(walk.speaks311(1), false);
  assert.equal(walk.fallBackTo311(1), true);
  assert.equal(walk.fallBackTo311(1), false, 'once');
  assert.equal(walk.speaks311(1), true);
  assert.equal(walk.speaks311(0), false);
});
