import { sunEvent } from './sun.js';
import type { Condition, LocationConfig, TimeOfDay, Trigger } from './types.js';
import { addDays, localTime, minuteOfDay, utcOf } from './zoned-time.js';

// When a time trigger runs next, as a UTC instant, from the local calendar
// of the controller's zone: a time of day on given weekdays, or sunrise or
// sunset (plus an offset) computed from the configured place. Pure
// functions of (rule, instant, zone): the engine's timers and the tests
// under a controlled clock both use them.

type TimeTrigger = Extract<Trigger, { kind: 'time' }>;

/** Days searched ahead: a week for weekday rules, a polar night for the sun. */
const SEARCH_DAYS = 370;

/** The first run strictly after `afterUtc`; undefined when none comes within a year (the sun never rises). */
export function nextRun(trigger: TimeTrigger, afterUtc: number, zone: string, location: LocationConfig): number | undefined {
  const today = localTime(afterUtc, zone);
  // From yesterday: an offset or the zone's shift can put a run of yesterday's date after `afterUtc`.
  for (let days = -1; days < SEARCH_DAYS; days++) {
    const date = addDays(today.year, today.month, today.day, days);
    if (!trigger.weekdays.includes(date.weekday)) continue;
    const at = runOn(trigger, date, zone, location);
    if (at !== undefined && at > afterUtc) return at;
  }
  return undefined;
}

function runOn(trigger: TimeTrigger, date: { year: number; month: number; day: number }, zone: string, location: LocationConfig): number | undefined {
  if (trigger.at === 'sunrise' || trigger.at === 'sunset') {
    if (location.latitude === undefined || location.longitude === undefined) return undefined;
    const event = sunEvent(trigger.at, date.year, date.month, date.day, location.latitude, location.longitude);
    return event === undefined ? undefined : event + trigger.offsetMin * 60_000;
  }
  return utcOf(date.year, date.month, date.day, trigger.at.hour, trigger.at.minute, zone);
}

/** Whether a time window holds at `utcMs`: from `after` (included) to `before` (excluded), across midnight when after > before, all day when equal. */
export function inWindow(condition: Extract<Condition, { kind: 'time' }>, utcMs: number, zone: string): boolean {
  const local = localTime(utcMs, zone);
  const now = minuteOfDay(local);
  const from = minutes(condition.after);
  const to = minutes(condition.before);
  // A window across midnight belongs to the weekday it starts on.
  if (from === to) return condition.weekdays.includes(local.weekday);
  if (from < to) return now >= from && now < to && condition.weekdays.includes(local.weekday);
  if (now >= from) return condition.weekdays.includes(local.weekday);
  return now < to && condition.weekdays.includes((local.weekday + 6) % 7);
}

function minutes(time: TimeOfDay): number {
  return time.hour * 60 + time.minute;
}
