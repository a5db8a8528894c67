import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ControlState } from '../../../src/control/control-state.js';
import type { Output } from '../../../src/control/output.js';
import { PulseTimers } from '../../../src/control/pulses.js';

// Node may fire a timer a fraction of a millisecond before its delay (its
// start is the loop's cached time): the pulse's end then waits for the rest,
// so a pulse is never shorter than asked. The clock is stubbed to make that
// early firing happen on demand.

test('a pulse timer that fires early waits for the rest before the off', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  let now = 1000;
  t.mock.method(performance, 'now', () => now);
  const state = { setPulse: () => {}, pulseOf: () => undefined } as unknown as ControlState;
  const ended: string[] = [];
  const pulses = new PulseTimers(state, (_output, why) => ended.push(why));
  const output = { type: 'do', circuit: '1_01' } as unknown as Output;
  pulses.arm(output, 100);
  now += 99.6; // the timer fires, but 0.4 ms of the pulse are left
  t.mock.timers.tick(100);
  assert.deepEqual(ended, [], 'not ended 0.4 ms early');
  assert.equal(pulses.has(output), true);
  now += 0.4;
  t.mock.timers.tick(1);
  assert.equal(ended.length, 1, 'ended once the full 100 ms have passed');
  assert.equal(pulses.has(output), false);
});
