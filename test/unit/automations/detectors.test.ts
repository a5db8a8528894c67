import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { CounterDetector, PressDetector, QualityDetector, ThresholdDetector, type Reading } from '../../../src/automations/detectors.js';
import type { OffloadRequest } from '../../../src/automations/offload.js';
import type { Quality } from '../../../src/devices/quality/point-meta.js';
import { FakeClock } from '../../helpers/fake-clock.js';
import { startGate, stillBoardYaml, until } from '../../helpers/in-process.js';
import { BRAIN_DO, OutputTimeline } from '../../helpers/output-timeline.js';
import { tempDir } from '../../helpers/temp-dir.js';

// The detectors under a controlled clock: presses (short, long, double),
// a threshold's time and hysteresis, the counter window, quality changes;
// and a rule the firmware took is not run by the engine too.

function feed(clock: FakeClock, detector: { observe(reading: Reading): void }) {
  return (value: unknown, quality: Quality = 'good') => detector.observe({ value, quality, at: clock.monotonic() });
}

describe('presses', () => {
  const press = (kind: 'short' | 'long' | 'double', doubleWatched: boolean) => {
    const clock = new FakeClock(0);
    const fired: string[] = [];
    const detector = new PressDetector({ kind: 'press', input: 'di/1_01', press: kind, longS: 0.8, doubleS: 0.4 }, doubleWatched, clock, (cause) => fired.push(cause));
    const read = feed(clock, detector);
    read(0);
    const tap = (heldMs: number, gapMs: number) => {
      read(1);
      clock.advance(heldMs);
      read(0);
      clock.advance(gapMs);
    };
    return { clock, fired, read, tap };
  };

  test('short: at the release; held past long_s it is not short', () => {
    const { fired, tap } = press('short', false);
    tap(100, 0);
    assert.deepEqual(fired, ['di/1_01 pressed']);
    tap(1000, 0);
    assert.equal(fired.length, 1);
  });

  test('long: fires while held, once, at long_s', () => {
    const { fired, read, clock } = press('long', false);
    read(1);
    clock.advance(799);
    assert.deepEqual(fired, []);
    clock.advance(1);
    assert.deepEqual(fired, ['di/1_01 held 0.8 s']);
    clock.advance(5000);
    read(0);
    assert.equal(fired.length, 1);
  });

  test('double: two presses within double_s; with a double rule on the input, a short waits and a double is not two shorts', () => {
    const double = press('double', true);
    double.tap(80, 200);
    double.tap(80, 500);
    assert.deepEqual(double.fired, ['di/1_01 pressed twice']);
    const short = press('short', true);
    short.tap(80, 200);
    short.tap(80, 500);
    assert.deepEqual(short.fired, [], 'the double press is not a short one');
    short.tap(80, 399);
    assert.deepEqual(short.fired, []);
    short.clock.advance(1);
    assert.deepEqual(short.fired, ['di/1_01 pressed'], 'a single press fires once double_s has passed');
  });

  test('a button held at start-up, or while the reading was bad, is not a press', () => {
    const clock = new FakeClock(0);
    const fired: string[] = [];
    const detector = new PressDetector({ kind: 'press', input: 'di/1_01', press: 'short', longS: 0.8, doubleS: 0.4 }, false, clock, (cause) => fired.push(cause));
    const read = feed(clock, detector);
    read(1);
    clock.advance(100);
    read(0);
    read(1, 'offline');
    read(1);
    read(0);
    assert.deepEqual(fired, []);
  });
});

test('threshold: for_s holds it back, a dip below the limit cancels, bad quality drops the time', () => {
  const clock = new FakeClock(0);
  const fired: string[] = [];
  const read = feed(clock, new ThresholdDetector({ kind: 'threshold', input: 'ai/1_01', field: 'value', above: 10, hysteresis: 1, forS: 5 }, clock, (cause) => fired.push(cause)));
  read(5);
  read(11);
  clock.advance(4000);
  read(9.5);
  clock.advance(2000);
  assert.deepEqual(fired, [], 'back below the limit before 5 s');
  read(11);
  clock.advance(3000);
  read(11, 'stale');
  clock.advance(3000);
  assert.deepEqual(fired, [], 'a stale value drops the time');
  read(11);
  clock.advance(5000);
  assert.deepEqual(fired, [], 'the first good reading after a bad one is a baseline: already above, so it must come back first');
  read(8.9);
  read(11);
  clock.advance(5000);
  assert.equal(fired.length, 1);
  assert.match(fired[0]!, /ai\/1_01 above 10 for 5 s/);
});

test('counter: rising by N within the window fires once, then counts afresh; a reset starts over', () => {
  const clock = new FakeClock(0);
  const fired: string[] = [];
  const read = feed(clock, new CounterDetector({ kind: 'counter', input: 'di/1_05', field: 'counter', risesBy: 10, withinS: 60 }, (cause) => fired.push(cause)));
  read(100);
  for (let i = 1; i <= 9; i++) {
    clock.advance(10_000);
    read(100 + i);
  }
  assert.deepEqual(fired, [], 'slow: 9 in 90 s, never 10 within 60 s');
  for (let i = 0; i < 10; i++) {
    clock.advance(1000);
    read(110 + i);
  }
  assert.equal(fired.length, 1, 'fast: 10 within 60 s');
  read(2);
  read(11);
  assert.equal(fired.length, 1, 'a counter that went down (power cycle) starts afresh: 2 → 11 is 9');
  read(12);
  assert.equal(fired.length, 2);
});

test('quality: fires on the change, not on the first reading', () => {
  const clock = new FakeClock(0);
  const fired: string[] = [];
  const read = feed(clock, new QualityDetector({ kind: 'quality', input: 'modbus_slave/1', quality: 'offline' }, (cause) => fired.push(cause)));
  read(null, 'offline');
  assert.deepEqual(fired, [], 'offline at start-up is how it is, not a change');
  read(null, 'good');
  read(null, 'offline');
  assert.deepEqual(fired, ['modbus_slave/1 became offline']);
});

test('a rule the firmware took is not run by the engine too; the list handed over has its shape', async () => {
  const dir = tempDir('iogate-automation-offload-');
  const asked: OffloadRequest[][] = [];
  const gate = await startGate(
    `alias_file: ${join(dir, 'alias.yaml')}\n${stillBoardYaml()}
automations:
  hall:
    when: {input: di/1_04}
    then: {output: do/1_04, follow: inverted}
    offload: firmware
  lamp:
    when: {input: di/1_02, edge: rising}
    then: {output: do/1_02, toggle: true}
    offload: firmware
`,
    { offload: async (requests) => (asked.push(requests), requests.map(({ id }) => ({ id, offloaded: id === 'hall', ...(id === 'hall' ? {} : { reason: 'another board' }) }))) },
  );
  const timeline = new OutputTimeline(gate.board, [BRAIN_DO(2), BRAIN_DO(4)]);
  try {
    assert.deepEqual(asked, [[{ id: 'hall', input: 'di/1_04', output: 'do/1_04', mode: 'inverted' }, { id: 'lamp', input: 'di/1_02', output: 'do/1_02', mode: 'toggle' }]]);
    const state = (await (await fetch(`${gate.baseUrl}/rest/automation/hall`)).json()) as Record<string, unknown>;
    assert.equal(state['offloaded'], true);
    gate.setInput(3, true);
    gate.setInput(1, true);
    await until(() => timeline.isOn('do/1_02'), 'the rule the firmware did not take runs in the engine', 2000);
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.ok(timeline.samples.every(({ on }) => !on[1]), 'the engine never wrote the offloaded rule\'s output');
  } finally {
    timeline.stop();
    await gate.close();
  }
});
