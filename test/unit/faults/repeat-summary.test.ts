import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RepeatSummary, SUMMARY_PERIOD_MS } from '../../../src/logging/repeat-summary.js';

// Repeated failures make one summary line per period, not one per attempt.

test('120 attempts over ten minutes give one summary, counting them all', () => {
  let now = 0;
  const summary = new RepeatSummary(SUMMARY_PERIOD_MS, () => now);
  summary.begin();
  const lines: Array<{ attempts: number; minutes: number }> = [];
  for (let attempt = 1; attempt <= 120; attempt++) {
    now = attempt * 5000;
    const due = summary.attempt();
    if (due) lines.push(due);
  }
  assert.deepEqual(lines, [{ attempts: 120, minutes: 10 }]);
  assert.equal(summary.attemptsSinceBegin, 120);
  assert.equal(summary.secondsSinceBegin, 600);
  // The next period starts counting afresh.
  for (let attempt = 1; attempt <= 60; attempt++) {
    now += 10_000;
    const due = summary.attempt();
    if (due) lines.push(due);
  }
  assert.deepEqual(lines[1], { attempts: 60, minutes: 10 });
  summary.begin();
  assert.equal(summary.attemptsSinceBegin, 0);
});
