import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FailSafeOffs } from '../../../src/control/fail-safe-offs.js';
import type { Output } from '../../../src/control/output.js';
import { createLogger } from '../../../src/logging/log.js';

// The retried off of FailSafeOffs asks, under the output's locks, whether it
// is still wanted: a client's write that came in meanwhile (and cancelled it)
// must not be switched off over by an off that was already on its way.

test("an off already on its way is not written once a client's write cancelled it", async () => {
  const output = { type: 'do', circuit: '1_01' } as unknown as Output;
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const asked: boolean[] = [];
  const offs = new FailSafeOffs(async (_output, stillWanted) => {
    await gate; // waiting for the output's locks, held by the client's write
    asked.push(stillWanted());
  }, createLogger('CRITICAL'));
  offs.request(output, 'pulse ended');
  assert.equal(offs.has(output), true);
  offs.cancel(output); // the client's write landed first
  release();
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(asked, [false], 'the off saw that it was no longer wanted');
  assert.equal(offs.has(output), false);
});

test('an off that fails is tried again until it lands, then its done runs once', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const output = { type: 'do', circuit: '1_01' } as unknown as Output;
  let attempts = 0;
  let done = 0;
  const offs = new FailSafeOffs(async () => {
    attempts++;
    if (attempts < 3) throw new Error('board away');
  }, createLogger('CRITICAL'));
  offs.request(output, 'pulse ended', () => done++);
  for (let i = 0; i < 5; i++) {
    await new Promise((resolve) => setImmediate(resolve));
    t.mock.timers.tick(1000);
  }
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(attempts, 3);
  assert.equal(done, 1);
  assert.equal(offs.has(output), false);
});
