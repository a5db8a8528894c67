import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ScanLoop } from '../../../src/devices/slave/scan-loop.js';
import type { SlaveUnit } from '../../../src/devices/slave/slave-unit.js';

// Slaves scanned at the same period share one grid and one timer; each
// still runs its own scans, so one whose scan hangs makes no other late.

const timers = () => process.getActiveResourcesInfo().filter((type) => type === 'Timeout').length;

function fakeSlave(hang = false) {
  let scans = 0;
  let wake: (() => void) | undefined;
  const slave = {
    stats: { overruns: 0 },
    answering: true,
    scan: () => {
      scans++;
      wake?.();
      return hang ? new Promise<void>(() => {}) : Promise.resolve();
    },
  };
  return {
    slave: slave as unknown as SlaveUnit,
    get scans() {
      return scans;
    },
    overruns: () => slave.stats.overruns,
    /** Resolves once the slave has had `count` scans in all. */
    until: (count: number) =>
      new Promise<void>((resolve) => {
        wake = () => scans >= count && resolve();
        wake();
      }),
  };
}

test('slaves with the same scan period share one timer; one whose scan hangs only counts its own overruns', async () => {
  const before = timers();
  const a = fakeSlave();
  const b = fakeSlave();
  const stuck = fakeSlave(true);
  const loops = [new ScanLoop(a.slave, 5, true), new ScanLoop(b.slave, 5, true), new ScanLoop(stuck.slave, 5, true)];
  for (const loop of loops) loop.start();
  try {
    assert.equal(timers() - before, 1);
    await Promise.all([a.until(10), b.until(10)]);
    assert.equal(timers() - before, 1);
    assert.equal(stuck.scans, 1);
    assert.ok(stuck.overruns() >= 5, `overruns of the stuck slave: ${stuck.overruns()}`);
  } finally {
    for (const loop of loops) loop.stop();
  }
  assert.equal(timers() - before, 0);
});

test('a slave with another period gets a grid of its own', async () => {
  const before = timers();
  const fast = fakeSlave();
  const slow = fakeSlave();
  const loops = [new ScanLoop(fast.slave, 3, true), new ScanLoop(slow.slave, 7, true)];
  for (const loop of loops) loop.start();
  try {
    assert.equal(timers() - before, 2);
    await Promise.all([fast.until(5), slow.until(5)]);
  } finally {
    for (const loop of loops) loop.stop();
  }
  assert.equal(timers() - before, 0);
});
