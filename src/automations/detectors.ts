import type { Quality } from '../devices/quality/point-meta.js';
import type { Clock, Timer } from './clock.js';
import type { Trigger } from './types.js';

// One detector per automation turns readings of its trigger point into
// firings. Rules shared by all (docs/adr/0001-automation-semantics.md):
// the first good reading is a baseline, never an edge; a reading whose
// quality is not good fires nothing and drops what the detector was
// building up (a press, a threshold's time), so the next good reading is a
// new baseline: nothing fires from a value that went bad and came back.

export interface Reading {
  value: unknown;
  quality: Quality;
  /** Monotonic ms of the reading. */
  at: number;
}

/** `level` is the input's value for a follow rule (0 or 1). */
export type Fire = (cause: string, level?: number) => void;

export interface Detector {
  observe(reading: Reading): void;
  /** Drops timers (stop, reload, disable). */
  reset(): void;
}

export function binaryOf(value: unknown): number | undefined {
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (typeof value === 'number' && Number.isFinite(value)) return value !== 0 ? 1 : 0;
  return undefined;
}

function numberOf(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

export class EdgeDetector implements Detector {
  private last: number | undefined;

  constructor(
    private readonly trigger: Extract<Trigger, { kind: 'edge' }>,
    private readonly fire: Fire,
  ) {}

  observe({ value, quality }: Reading): void {
    const level = binaryOf(value);
    if (quality !== 'good' || level === undefined) {
      this.last = undefined;
      return;
    }
    const before = this.last;
    this.last = level;
    const { edge, input } = this.trigger;
    if (before === undefined) {
      // A level rule acts on its first good reading; an edge rule only learns the level.
      if (edge === 'level') this.fire(`${input} read ${level === 1 ? 'on' : 'off'}`, level);
      return;
    }
    if (level === before) return;
    const rose = level === 1;
    if (edge === 'level' || edge === 'any' || (edge === 'rising') === rose) this.fire(`${input} ${rose ? 'rose' : 'fell'}`, level);
  }

  reset(): void {
    this.last = undefined;
  }
}

/**
 * Short, long and double presses of a push button. A long press fires when
 * the button has been held `longS` (not at its release). A short press fires
 * at the release; when a double press is also watched on the same input it
 * waits `doubleS` first, so one double press is not also two short ones.
 */
export class PressDetector implements Detector {
  private down: boolean | undefined;
  /** Pressed at start-up or when the reading turned good: that press is not ours. */
  private ignoring = false;
  private longFired = false;
  private secondPress = false;
  private longTimer: Timer | undefined;
  private shortTimer: Timer | undefined;

  constructor(
    private readonly trigger: Extract<Trigger, { kind: 'press' }>,
    /** Whether some automation on this input waits for double presses. */
    private readonly doubleWatched: boolean,
    private readonly clock: Clock,
    private readonly fire: Fire,
  ) {}

  observe({ value, quality }: Reading): void {
    const level = binaryOf(value);
    if (quality !== 'good' || level === undefined) {
      this.reset();
      return;
    }
    const pressed = level === 1;
    if (this.down === undefined) {
      this.down = pressed;
      this.ignoring = pressed;
      return;
    }
    if (pressed === this.down) return;
    this.down = pressed;
    if (pressed) this.pressed();
    else this.released();
  }

  private pressed(): void {
    const { input, press, longS } = this.trigger;
    this.longFired = false;
    if (this.shortTimer) {
      // Pressed again within the double-press time: a double press, not a short one.
      this.shortTimer.cancel();
      this.shortTimer = undefined;
      this.secondPress = true;
    }
    this.longTimer = this.clock.after(longS * 1000, () => {
      this.longTimer = undefined;
      this.longFired = true;
      this.secondPress = false;
      if (press === 'long') this.fire(`${input} held ${longS} s`);
    });
  }

  private released(): void {
    const { input, press, doubleS } = this.trigger;
    this.longTimer?.cancel();
    this.longTimer = undefined;
    if (this.ignoring) {
      this.ignoring = false;
      return;
    }
    if (this.longFired) return;
    if (this.secondPress) {
      this.secondPress = false;
      if (press === 'double') this.fire(`${input} pressed twice`);
      return;
    }
    if (!this.doubleWatched) {
      if (press === 'short') this.fire(`${input} pressed`);
      return;
    }
    this.shortTimer = this.clock.after(doubleS * 1000, () => {
      this.shortTimer = undefined;
      if (press === 'short') this.fire(`${input} pressed`);
    });
  }

  reset(): void {
    this.longTimer?.cancel();
    this.shortTimer?.cancel();
    this.longTimer = this.shortTimer = undefined;
    this.down = undefined;
    this.ignoring = this.longFired = this.secondPress = false;
  }
}

/**
 * A value crossing a limit. `above: X` fires when the value goes above X
 * (and has stayed above it `forS`), and is armed again only once the value
 * fell below X − hysteresis; `below` mirrors it. A value already past the
 * limit at the first good reading does not fire (no edge is invented): it
 * must come back first.
 */
export class ThresholdDetector implements Detector {
  /** Armed: the value was on the safe side; undefined: no good reading yet. */
  private armed: boolean | undefined;
  private pending: Timer | undefined;

  constructor(
    private readonly trigger: Extract<Trigger, { kind: 'threshold' }>,
    private readonly clock: Clock,
    private readonly fire: Fire,
  ) {}

  private past(value: number): boolean {
    const { above, below } = this.trigger;
    return above !== undefined ? value > above : value < below!;
  }

  private rearmed(value: number): boolean {
    const { above, below, hysteresis } = this.trigger;
    return above !== undefined ? value < above - hysteresis : value > below! + hysteresis;
  }

  observe({ value, quality }: Reading): void {
    const number = numberOf(value);
    if (quality !== 'good' || number === undefined) {
      this.reset();
      return;
    }
    if (this.armed === undefined) {
      this.armed = !this.past(number);
      return;
    }
    if (!this.armed) {
      if (this.rearmed(number)) this.armed = true;
      return;
    }
    if (!this.past(number)) {
      // Back before the time was up: no firing.
      this.pending?.cancel();
      this.pending = undefined;
      return;
    }
    if (this.pending) return;
    const { input, above, below, forS } = this.trigger;
    const cause = `${input} ${above !== undefined ? `above ${above}` : `below ${below}`}${forS > 0 ? ` for ${forS} s` : ''} (${number})`;
    if (forS === 0) {
      this.armed = false;
      this.fire(cause);
      return;
    }
    this.pending = this.clock.after(forS * 1000, () => {
      this.pending = undefined;
      this.armed = false;
      this.fire(cause);
    });
  }

  reset(): void {
    this.pending?.cancel();
    this.pending = undefined;
    this.armed = undefined;
  }
}

/** Readings kept per counter window: older ones are thinned out, the window's low point kept. */
const MAX_COUNTER_SAMPLES = 256;

/**
 * A counter rising by N within a window (a water meter's pulses while
 * nobody should draw water). After firing it counts afresh from there.
 * A counter that goes down (a board's power cycle, a wrap) starts afresh.
 */
export class CounterDetector implements Detector {
  private samples: Array<{ at: number; count: number }> = [];

  constructor(
    private readonly trigger: Extract<Trigger, { kind: 'counter' }>,
    private readonly fire: Fire,
  ) {}

  observe({ value, quality, at }: Reading): void {
    const count = numberOf(value);
    if (quality !== 'good' || count === undefined) {
      this.samples = [];
      return;
    }
    const last = this.samples.at(-1);
    if (last && count < last.count) this.samples = [];
    if (last && count === last.count) return;
    const windowStart = at - this.trigger.withinS * 1000;
    while (this.samples.length > 1 && this.samples[1]!.at <= windowStart) this.samples.shift();
    // The oldest sample may be older than the window: it is the count when the window began.
    this.samples.push({ at, count });
    if (this.samples.length > MAX_COUNTER_SAMPLES) this.samples = this.samples.filter((_, index) => index === 0 || index % 2 === 1 || index === this.samples.length - 1);
    const low = this.samples[0]!;
    const risen = count - low.count;
    if (this.samples.length > 1 && risen >= this.trigger.risesBy) {
      this.samples = [{ at, count }];
      this.fire(`${this.trigger.input} counted ${risen} within ${this.trigger.withinS} s`);
    }
  }

  reset(): void {
    this.samples = [];
  }
}

export class QualityDetector implements Detector {
  private last: Quality | undefined;

  constructor(
    private readonly trigger: Extract<Trigger, { kind: 'quality' }>,
    private readonly fire: Fire,
  ) {}

  observe({ quality }: Reading): void {
    const before = this.last;
    this.last = quality;
    if (before === undefined || before === quality) return;
    const wanted = this.trigger.quality;
    const matches = wanted === 'bad' ? quality !== 'good' && before === 'good' : quality === wanted;
    if (matches) this.fire(`${this.trigger.input} became ${quality}`);
  }

  reset(): void {
    this.last = undefined;
  }
}
