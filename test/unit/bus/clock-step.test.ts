import { test } from 'node:test';
import assert from 'node:assert/strict';
import { brain00 } from '../../../src/boards/builtin/neuron.js';
import { FaultyLine } from '../../helpers/faulty-line.js';
import { startBrainsOnFaultyLine, startRig } from '../../helpers/bus-rig.js';

// Intervals run on the monotonic clock: a step of the wall clock (NTP after
// boot on a board without RTC, an operator setting the date) must neither
// hold an offline slave offline for as long as the step, nor age anything.
// The wall clock is stepped here by replacing Date.now, as a step would move it.

function stepWallClock(byMs: number): () => void {
  const real = Date.now;
  Date.now = () => real() + byMs;
  return () => {
    Date.now = real;
  };
}

test('after the wall clock steps back an hour, an offline slave that answers again is back within its probe interval', async (t) => {
  const { line, rig } = await startBrainsOnFaultyLine(['1'], { timeoutMs: 40, retries: 0 });
  let restore = () => {};
  try {
    line.silent.add(1);
    await rig.whenState('1', 'offline');
    // Probes are scheduled from here on; the clock steps back while they are.
    restore = stepWallClock(-3_600_000);
    line.silent.delete(1);
    const started = performance.now();
    // The first probes come 0.5 s and 1 s apart; an hour's wait is what the step used to cost.
    await Promise.race([
      rig.whenState('1', 'online'),
      new Promise((_, reject) => setTimeout(() => reject(new Error('still offline 5 s after the slave answers again: probes wait on the wall clock')), 5000).unref()),
    ]);
    t.diagnostic(`back online ${Math.round(performance.now() - started)} ms after it answered again`);
    assert.equal(rig.slave('1').state, 'online');
  } finally {
    restore();
    await rig.stop();
  }
});

test('values age on the monotonic clock: a step forward does not make them stale, a step back does not keep them good', async () => {
  const line = new FaultyLine([{ unit: 1, model: brain00 }]);
  // Read once (scan_enabled: false), then never again: its values only age.
  const rig = await startRig([{ link: line, slaves: [{ name: '1', unit: 1, model: brain00, periodMs: 20, scanEnabled: false }] }]);
  let restore = () => {};
  try {
    await rig.whenState('1', 'online');
    const di = rig.registry.resolve('di', '1_01');
    assert.equal(di.metaState()['quality'], 'good');

    restore = stepWallClock(3_600_000);
    const forward = di.metaState();
    assert.equal(forward['quality'], 'good', 'a step forward made a fresh value stale');
    assert.ok((forward['age_s'] as number) < 60, `age_s ${String(forward['age_s'])} after a step forward`);
    restore();

    restore = stepWallClock(-3_600_000);
    // Past the stale bound (500 ms at least) with no read: stale, whatever the wall clock says.
    await new Promise((resolve) => setTimeout(resolve, 700));
    const back = di.metaState();
    assert.equal(back['quality'], 'stale', 'a step back kept a value that stopped coming good');
    assert.ok((back['age_s'] as number) >= 0.5 && (back['age_s'] as number) < 60, `age_s ${String(back['age_s'])}`);
    // `ts` is shown on the wall clock as it is now.
    assert.ok(Math.abs(Date.parse(back['ts'] as string) - Date.now()) < 60_000, `ts ${String(back['ts'])}`);
  } finally {
    restore();
    await rig.stop();
  }
});
