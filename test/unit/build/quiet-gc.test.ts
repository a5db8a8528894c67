import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  BUSY_REQUESTS_PER_TICK,
  MIN_TICKS_BETWEEN,
  QUIET_REQUESTS_PER_TICK,
  QuietCollector,
} from '../../../src/memory/quiet-gc.js';

// The collections after a burst of requests: once per burst, never during
// one, never without one, and never more often than the bound.

describe('collections when a burst of requests is over', { timeout: 10_000 }, () => {
  const busy = BUSY_REQUESTS_PER_TICK;
  const quiet = QUIET_REQUESTS_PER_TICK - 1;

  test('one collection when the rate drops after a burst, none while it lasts', () => {
    let collected = 0;
    const collector = new QuietCollector(() => collected++);
    for (let i = 0; i < 30; i++) collector.tick(busy * 4);
    assert.equal(collected, 0, 'nothing while busy');
    assert.equal(collector.tick(quiet), true);
    for (let i = 0; i < 30; i++) collector.tick(quiet);
    assert.equal(collected, 1, 'once per burst, however long the quiet lasts');
  });

  test('steady light traffic never collects', () => {
    let collected = 0;
    const collector = new QuietCollector(() => collected++);
    for (let i = 0; i < 100; i++) collector.tick(i % 2 === 0 ? quiet : busy - 1);
    assert.equal(collected, 0);
  });

  test('bursts in quick succession: at most one collection per bound', () => {
    let collected = 0;
    const collector = new QuietCollector(() => collected++);
    const ticks = MIN_TICKS_BETWEEN * 10;
    for (let i = 0; i < ticks; i++) collector.tick(i % 2 === 0 ? busy : 0);
    assert.equal(collected, ticks / MIN_TICKS_BETWEEN);
    assert.equal(collector.collections, collected);
  });

  test('the service unit lets the daemon collect (node --expose-gc)', () => {
    const unit = readFileSync(fileURLToPath(new URL('../../../deploy/iogate.service', import.meta.url)), 'utf8');
    const execStart = /^ExecStart=(.*)$/m.exec(unit)?.[1] ?? '';
    assert.ok(execStart.split(/\s+/).includes('--expose-gc'), execStart);
  });
});
