import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RegisterCache } from '../../../src/devices/slave/register-cache.js';

// A poll asked for before a write and answered after the write's
// confirmation patched the cache carries the slave's state from before the
// write: it must not put the old value back (a relay shown off while on,
// which the interlock check would believe).

test('a register patched after the read was asked for keeps the patched value; the others take the read', () => {
  const cache = new RegisterCache([{ start_reg: 0, count: 3, frequency: 1, type: 'holding' }]);
  cache.store(0, [0, 0, 0]);
  const since = cache.mark();
  // The write of register 1 is confirmed while the read is on its way.
  cache.patch('holding', 1, [0b10]);
  // The read's reply: the slave's state before the write, and news in register 2.
  assert.equal(cache.store(0, [0, 0, 7], 0, Date.now(), since), true);
  assert.equal(cache.get('holding', 1), 0b10, 'the confirmed write stands');
  assert.equal(cache.get('holding', 2), 7, 'the rest of the reply is taken');
  // The next read, asked for after the patch, is taken whole.
  cache.store(0, [0, 0b11, 7], 0, Date.now(), cache.mark());
  assert.equal(cache.get('holding', 1), 0b11);
});
