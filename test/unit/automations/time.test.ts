import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { nextRun, inWindow } from '../../../src/automations/schedule.js';
import { ScheduleTimer, ScheduleWheel, LATE_MS } from '../../../src/automations/schedule-timer.js';
import { sunEvent } from '../../../src/automations/sun.js';
import type { LocationConfig, Trigger } from '../../../src/automations/types.js';
import { localTime, utcOf } from '../../../src/automations/zoned-time.js';
import { FakeClock } from '../../helpers/fake-clock.js';

// Time triggers under a controlled clock, in an explicit zone (never the
// machine's): times of day, weekdays, DST's missing and repeated hours in
// Europe/Prague, wall-clock steps, and sunrise/sunset against published values.

const PRAGUE = 'Europe/Prague';
const PLACE: LocationConfig = { latitude: 50.0755, longitude: 14.4378, timeZone: PRAGUE };
const EVERY_DAY = [0, 1, 2, 3, 4, 5, 6];
type TimeTrigger = Extract<Trigger, { kind: 'time' }>;
const at = (hour: number, minute: number, weekdays = EVERY_DAY): TimeTrigger => ({ kind: 'time', at: { hour, minute }, offsetMin: 0, weekdays });
const iso = (ms: number | undefined) => (ms === undefined ? 'none' : new Date(ms).toISOString());
const local = (ms: number) => {
  const t = localTime(ms, PRAGUE);
  return `${t.year}-${String(t.month).padStart(2, '0')}-${String(t.day).padStart(2, '0')} ${String(t.hour).padStart(2, '0')}:${String(t.minute).padStart(2, '0')}`;
};

describe('time of day', () => {
  test('07:30 every day in Prague: CET in winter, CEST in summer', () => {
    assert.equal(iso(nextRun(at(7, 30), Date.UTC(2026, 0, 10, 12), PRAGUE, PLACE)), '2026-01-11T06:30:00.000Z');
    assert.equal(iso(nextRun(at(7, 30), Date.UTC(2026, 6, 10, 3), PRAGUE, PLACE)), '2026-07-10T05:30:00.000Z');
  });

  test('weekdays only: from Friday noon the next run is Monday', () => {
    // 2026-07-10 is a Friday.
    assert.equal(local(nextRun(at(7, 30, [1, 2, 3, 4, 5]), Date.UTC(2026, 6, 10, 12), PRAGUE, PLACE)!), '2026-07-13 07:30');
  });

  test('the zone is the configured one, not the machine\'s', () => {
    assert.equal(iso(nextRun(at(7, 30), Date.UTC(2026, 0, 10, 12), 'America/New_York', PLACE)), '2026-01-10T12:30:00.000Z');
  });

  test('spring forward (29 March 2026): 02:30 does not exist and runs at 03:30 CEST, once; the days around are normal', () => {
    const runs: string[] = [];
    let t = Date.UTC(2026, 2, 27, 12);
    for (let i = 0; i < 4; i++) runs.push(local((t = nextRun(at(2, 30), t, PRAGUE, PLACE)!)));
    assert.deepEqual(runs, ['2026-03-28 02:30', '2026-03-29 03:30', '2026-03-30 02:30', '2026-03-31 02:30']);
  });

  test('fall back (25 October 2026): 02:30 happens twice and runs once, at the first (CEST)', () => {
    const runs: number[] = [];
    let t = Date.UTC(2026, 9, 24, 12);
    for (let i = 0; i < 3; i++) runs.push((t = nextRun(at(2, 30), t, PRAGUE, PLACE)!));
    assert.deepEqual(runs.map(iso), ['2026-10-25T00:30:00.000Z', '2026-10-26T01:30:00.000Z', '2026-10-27T01:30:00.000Z']);
  });

  test('utcOf: the gap moves forward by its length, the repeated hour means its first pass', () => {
    assert.equal(iso(utcOf(2026, 3, 29, 2, 0, PRAGUE)), '2026-03-29T01:00:00.000Z');
    assert.equal(iso(utcOf(2026, 10, 25, 2, 59, PRAGUE)), '2026-10-25T00:59:00.000Z');
    assert.equal(iso(utcOf(2026, 10, 25, 3, 0, PRAGUE)), '2026-10-25T02:00:00.000Z');
  });

  test('time windows, across midnight and by weekday', () => {
    const night = { kind: 'time' as const, after: { hour: 22, minute: 0 }, before: { hour: 6, minute: 0 }, weekdays: EVERY_DAY };
    assert.equal(inWindow(night, utcOf(2026, 7, 10, 23, 0, PRAGUE), PRAGUE), true);
    assert.equal(inWindow(night, utcOf(2026, 7, 10, 5, 59, PRAGUE), PRAGUE), true);
    assert.equal(inWindow(night, utcOf(2026, 7, 10, 6, 0, PRAGUE), PRAGUE), false);
    const fridayNight = { ...night, weekdays: [5] };
    assert.equal(inWindow(fridayNight, utcOf(2026, 7, 11, 3, 0, PRAGUE), PRAGUE), true, 'Saturday 03:00 belongs to Friday night');
    assert.equal(inWindow(fridayNight, utcOf(2026, 7, 10, 3, 0, PRAGUE), PRAGUE), false, 'Friday 03:00 belongs to Thursday night');
  });
});

describe('sunrise and sunset (NOAA equations), Prague, against published times', () => {
  // Published (timeanddate.com, Prague): 21 Jun 2026 04:52 / 21:15; 21 Dec 2026 08:00 / 16:02; 20 Mar 2026 06:05 / 18:15.
  const cases: Array<[number, number, string, string]> = [
    [6, 21, '04:52', '21:15'],
    [12, 21, '08:00', '16:02'],
    [3, 20, '06:05', '18:15'],
  ];
  for (const [month, day, rise, set] of cases) {
    test(`2026-${month}-${day}: ${rise} and ${set} within two minutes`, () => {
      for (const [event, published] of [['sunrise', rise], ['sunset', set]] as const) {
        const computed = sunEvent(event, 2026, month, day, PLACE.latitude!, PLACE.longitude!)!;
        const [h, m] = published.split(':').map(Number);
        const expected = utcOf(2026, month, day, h!, m!, PRAGUE);
        assert.ok(Math.abs(computed - expected) <= 120_000, `${event} ${local(computed)} vs ${published}`);
      }
    });
  }

  test('sunset with an offset, and no sunrise in a polar night', () => {
    const dusk: TimeTrigger = { kind: 'time', at: 'sunset', offsetMin: -15, weekdays: EVERY_DAY };
    const run = nextRun(dusk, Date.UTC(2026, 5, 21, 6), PRAGUE, PLACE)!;
    assert.equal(local(run).slice(0, 13), '2026-06-21 21');
    assert.ok(Math.abs(run - (sunEvent('sunset', 2026, 6, 21, PLACE.latitude!, PLACE.longitude!)! - 15 * 60_000)) < 1000);
    assert.equal(sunEvent('sunrise', 2026, 12, 21, 80, 15), undefined);
  });
});

describe('the schedule timer under a controlled clock', () => {
  function timer(trigger: TimeTrigger, clock: FakeClock) {
    const fired: string[] = [];
    const skipped: string[] = [];
    const schedule = new ScheduleTimer(trigger, PRAGUE, PLACE, clock, () => fired.push(local(clock.wall())), (why) => skipped.push(why), () => undefined);
    schedule.start();
    return { fired, skipped, schedule };
  }

  test('fires at the time, then the next day', () => {
    const clock = new FakeClock(utcOf(2026, 7, 10, 7, 0, PRAGUE));
    const { fired, schedule } = timer(at(7, 30), clock);
    clock.advance(29 * 60_000);
    assert.deepEqual(fired, []);
    clock.advance(60_000);
    assert.deepEqual(fired, ['2026-07-10 07:30']);
    clock.advance(86_400_000);
    assert.deepEqual(fired, ['2026-07-10 07:30', '2026-07-11 07:30']);
    schedule.stop();
  });

  test('the DST night: one run at 03:30 CEST on spring-forward day', () => {
    const clock = new FakeClock(Date.UTC(2026, 2, 28, 12));
    const { fired, schedule } = timer(at(2, 30), clock);
    clock.advance(2 * 86_400_000);
    assert.deepEqual(fired, ['2026-03-29 03:30', '2026-03-30 02:30']);
    schedule.stop();
  });

  test('the fall-back night: one run, not two', () => {
    const clock = new FakeClock(Date.UTC(2026, 9, 24, 12));
    const { fired, schedule } = timer(at(2, 30), clock);
    clock.advance(36 * 3_600_000);
    assert.deepEqual(fired, ['2026-10-25 02:30']);
    schedule.stop();
  });

  test('the wall clock stepped back over a run that fired: it does not fire again', () => {
    const clock = new FakeClock(utcOf(2026, 7, 10, 7, 29, PRAGUE));
    const { fired, schedule } = timer(at(7, 30), clock);
    clock.advance(2 * 60_000);
    assert.deepEqual(fired, ['2026-07-10 07:30']);
    clock.stepWall(-3_600_000);
    clock.advance(2 * 3_600_000);
    assert.deepEqual(fired, ['2026-07-10 07:30']);
    schedule.stop();
  });

  test('the wall clock stepped forward past a run: skipped and said so, the next day runs', () => {
    const clock = new FakeClock(utcOf(2026, 7, 10, 7, 0, PRAGUE));
    const { fired, skipped, schedule } = timer(at(7, 30), clock);
    clock.stepWall(2 * 3_600_000);
    clock.advance(60_000);
    assert.deepEqual(fired, []);
    assert.equal(skipped.length, 1);
    assert.match(skipped[0]!, /skipped: the wall clock jumped past it/);
    assert.ok(LATE_MS <= 60_000);
    clock.advance(86_400_000);
    assert.deepEqual(fired, ['2026-07-11 07:30']);
    schedule.stop();
  });

  test('schedules on one wheel share one timer: 1,000 of them wake once a minute together, and each fires at its time', () => {
    const clock = new FakeClock(utcOf(2026, 7, 10, 7, 0, PRAGUE));
    const wakes: number[] = [];
    const counting = { monotonic: () => clock.monotonic(), wall: () => clock.wall(), after: (ms: number, run: () => void) => clock.after(ms, () => (wakes.push(clock.wall()), run())) };
    const wheel = new ScheduleWheel(counting);
    const fired: string[] = [];
    const schedules = Array.from({ length: 1000 }, (_, i) => {
      const schedule = new ScheduleTimer(at(8 + (i % 2), 0), PRAGUE, PLACE, counting, () => fired.push(`${i} ${local(clock.wall())}`), () => undefined, () => undefined, wheel);
      schedule.start();
      return schedule;
    });
    clock.advance(30 * 60_000);
    assert.equal(wakes.length, 30, 'one wake a minute for all of them');
    clock.advance(31 * 60_000);
    assert.equal(fired.length, 500);
    assert.ok(fired.every((line) => line.endsWith('2026-07-10 08:00')));
    clock.advance(60 * 60_000);
    assert.equal(fired.length, 1000);
    assert.equal(fired.at(-1), '999 2026-07-10 09:00');
    assert.ok(wakes.length <= 122, `${wakes.length} wakes in two hours`);
    for (const schedule of schedules) schedule.stop();
    clock.advance(10 * 60_000);
    assert.ok(wakes.length <= 123, 'no wake once all stopped');
  });
});
