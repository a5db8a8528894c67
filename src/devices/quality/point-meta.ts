// Quality and age of a point: whether its value can be trusted now, and when
// it was last confirmed. Clients that ask for it (`?meta=1`, `/ws?meta=1`,
// `apis.webhook.meta`) get these fields appended to EVOK's object; everyone
// else sees EVOK's object unchanged.

/**
 * `good`: read within its stale bound. `stale`: older than that (the board
 * answers, but this value has not been refreshed). `offline`: its board or
 * sensor does not answer. `unknown`: never read.
 */
export type Quality = 'good' | 'stale' | 'offline' | 'unknown';

export interface PointMeta {
  quality: Quality;
  /** performance.now() of the last confirmed read or write; 0 when there was none. */
  confirmedAt: number;
}

// Ages run on the monotonic clock, `now` included: a step of the wall clock
// (NTP's first sync on a board without RTC, a date set by hand) must neither
// make every value stale at once nor keep a value that stopped coming "good"
// for as long as the step. The wall clock is only read to show `ts`.

/** When a value counts as stale: older than `periods` of its read period, and never sooner than `minMs`. */
export interface StaleRule {
  periods: number;
  minMs: number;
}

export const DEFAULT_STALE_RULE: StaleRule = { periods: 5, minMs: 500 };

export function staleBoundMs(periodMs: number, rule: StaleRule): number {
  return Math.max(periodMs * rule.periods, rule.minMs);
}

/** Quality of a value confirmed at `confirmedAt` whose source is reachable (or not). */
export function qualityOf(confirmedAt: number, reachable: boolean, boundMs: number, now: number): Quality {
  if (!reachable) return 'offline';
  if (confirmedAt === 0) return 'unknown';
  return now - confirmedAt > boundMs ? 'stale' : 'good';
}

/** The fields the meta view appends: `quality`, `ts` (ISO 8601, null before any) and `age_s`. */
export function metaFields({ quality, confirmedAt }: PointMeta, now: number): Record<string, unknown> {
  return {
    quality,
    ts: confirmedAt === 0 ? null : new Date(Date.now() - (now - confirmedAt)).toISOString(),
    age_s: confirmedAt === 0 ? null : Math.max(0, Math.round(now - confirmedAt)) / 1000,
  };
}
