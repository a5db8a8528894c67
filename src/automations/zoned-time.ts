// Wall-clock time in an IANA time zone through Intl alone (no tz database of
// our own, no dependence on the machine's TZ when a zone is configured).
// Local → UTC follows one rule for DST, written down in
// docs/adr/0001-automation-semantics.md: a local time that does not exist
// (spring forward) is moved forward by the gap (02:30 → 03:30), and one that
// exists twice (fall back) means the first of the two.

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;

export interface LocalTime {
  year: number;
  /** 1..12 */
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  /** 0 = Sunday. */
  weekday: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(zone: string): Intl.DateTimeFormat {
  let format = formatters.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
      weekday: 'short',
    });
    formatters.set(zone, format);
  }
  return format;
}

const WEEKDAYS: Record<string, number> = { Sun: 0, Mon: 1, Tue: 2, Wed: 3, Thu: 4, Fri: 5, Sat: 6 };

/** The zone in force: the configured one, else the system's. */
export function effectiveZone(configured: string | undefined): string {
  return configured ?? Intl.DateTimeFormat().resolvedOptions().timeZone ?? 'UTC';
}

export function localTime(utcMs: number, zone: string): LocalTime {
  const parts: Record<string, string> = {};
  for (const { type, value } of formatter(zone).formatToParts(new Date(utcMs))) parts[type] = value;
  return {
    year: Number(parts['year']),
    month: Number(parts['month']),
    day: Number(parts['day']),
    hour: Number(parts['hour']),
    minute: Number(parts['minute']),
    second: Number(parts['second']),
    weekday: WEEKDAYS[parts['weekday'] ?? 'Sun'] ?? 0,
  };
}

/** The zone's offset from UTC at `utcMs`, in ms (Prague in summer: +7 200 000). */
export function offsetAt(utcMs: number, zone: string): number {
  const floored = Math.floor(utcMs / 1000) * 1000;
  const local = localTime(floored, zone);
  return Date.UTC(local.year, local.month - 1, local.day, local.hour, local.minute, local.second) - floored;
}

/**
 * UTC ms of a local date and time. Offsets are looked up a day either side,
 * which covers every zone's transitions (at most one a day).
 */
export function utcOf(year: number, month: number, day: number, hour: number, minute: number, zone: string): number {
  const asUtc = Date.UTC(year, month - 1, day, hour, minute);
  const before = offsetAt(asUtc - DAY_MS, zone);
  const after = offsetAt(asUtc + DAY_MS, zone);
  const candidates = [...new Set([before, after])]
    .map((offset) => asUtc - offset)
    .filter((utc) => asUtc - offsetAt(utc, zone) === utc)
    .sort((a, b) => a - b);
  // Exists (once or twice): the first. In a gap: moved forward by the gap, i.e. read with the offset before it.
  return candidates[0] ?? asUtc - before;
}

/** The local calendar date `days` after the given one (any month overflow handled by Date.UTC). */
export function addDays(year: number, month: number, day: number, days: number): { year: number; month: number; day: number; weekday: number } {
  const date = new Date(Date.UTC(year, month - 1, day + days));
  return { year: date.getUTCFullYear(), month: date.getUTCMonth() + 1, day: date.getUTCDate(), weekday: date.getUTCDay() };
}

/** Minutes since local midnight. */
export function minuteOfDay(local: LocalTime): number {
  return local.hour * 60 + local.minute;
}

export { MINUTE_MS, DAY_MS };
