// A DI counter's total that never goes backwards. The board's counter is a
// 32-bit register pair: it wraps, it restarts at 0 when the board is
// power-cycled or replaced, and a read can tear between its two words. The
// total follows the raw readings and adds only what was counted:
//
// - A small step forward (at most MAX_PLAIN_STEP) is believed at once: pulses
//   between two polls.
// - Anything else (a step backwards, a jump forward) is a suspect, believed
//   only once the next reading (asked for at once) agrees with it. A torn read
//   is off by a multiple of 65536 and the next reading agrees with the last
//   believed one instead, so the suspect is dropped.
// - A believed step backwards is a wrap when the last reading was near the
//   top and no reset was likely; otherwise a reset, and what the board counted
//   since (the new reading, when it is near zero) is added.
//
// After the board was offline (or iogate restarted), a backwards step is taken
// for a reset rather than a wrap: the board may have been power-cycled.

const WRAP = 2 ** 32;
/** Pulses between two polls believed without a second reading; below 65536, the step of a torn read. */
export const MAX_PLAIN_STEP = 0x8000;
/** How near the top a wrap and how near zero a reset may be. */
export const NEAR = 2 ** 24;
/** Readings that disagree in a row before the last of them is believed anyway (a board that really changed). */
const MAX_SUSPECTS = 3;

export interface CounterSnapshot {
  /** Pulses counted in all, across wraps and resets. */
  total: number;
  /** The last believed raw reading. */
  raw: number;
}

export type CounterEvent =
  | { kind: 'wrap' }
  | { kind: 'reset'; added: number }
  | { kind: 'rebased'; from: number; to: number };

export class CounterTotal {
  total: number;
  /** The last believed raw reading; undefined until the first one (with no saved state). */
  private last: number | undefined;
  /** The board may have restarted since `last` was read: a backwards step is a reset. */
  private gap: boolean;
  private suspect: number | undefined;
  private suspects = 0;

  constructor(saved?: CounterSnapshot, private readonly onEvent: (event: CounterEvent) => void = () => {}) {
    this.total = saved?.total ?? 0;
    this.last = saved?.raw;
    this.gap = saved !== undefined;
  }

  /** Whether the total stands on a believed reading since start (else it is the saved one, possibly behind). */
  get settled(): boolean {
    return this.last !== undefined && !this.gap && this.suspect === undefined;
  }

  /** The last believed raw reading (undefined before the first). */
  get raw(): number | undefined {
    return this.last;
  }

  snapshot(): CounterSnapshot | undefined {
    return this.last === undefined ? undefined : { total: this.total, raw: this.last };
  }

  /** The board was away (offline, or iogate was not running): the next backwards step is a reset. */
  noteGap(): void {
    this.gap = true;
  }

  /** iogate wrote `raw` to the board's counter (EVOK's reset): continue from there without adding. */
  rebase(raw: number): void {
    this.last = raw;
    this.gap = false;
    this.clearSuspect();
  }

  /** Set the total itself (a client asked to reset it). */
  setTotal(total: number): void {
    this.total = total;
  }

  /**
   * One raw reading. Returns 'reread' when it is a suspect and a fresh reading
   * should be taken before it is believed; 'ok' otherwise.
   */
  observe(raw: number): 'ok' | 'reread' {
    if (this.last === undefined) return this.observeFirst(raw);
    const step = raw - this.last;
    if (step >= 0 && step <= MAX_PLAIN_STEP && this.suspect === undefined) {
      this.advance(raw);
      return 'ok';
    }
    if (this.suspect !== undefined) {
      const suspect = this.suspect;
      const fromSuspect = raw - suspect;
      if (step >= 0 && step <= MAX_PLAIN_STEP) {
        // The suspect was a torn or garbled read: this one continues the last believed reading.
        this.clearSuspect();
        this.advance(raw);
        return 'ok';
      }
      if ((fromSuspect >= 0 && fromSuspect <= MAX_PLAIN_STEP) || this.suspects >= MAX_SUSPECTS) {
        this.clearSuspect();
        this.believe(suspect);
        this.advance(raw);
        return 'ok';
      }
    }
    this.suspect = raw;
    this.suspects++;
    return 'reread';
  }

  /**
   * The very first reading (no saved state): the total starts at the board's
   * count, so `counter_total` equals `counter` until the first wrap or reset.
   * It too is believed only once a second reading agrees.
   */
  private observeFirst(raw: number): 'ok' | 'reread' {
    const suspect = this.suspect;
    if (suspect !== undefined && ((raw >= suspect && raw - suspect <= MAX_PLAIN_STEP) || this.suspects >= MAX_SUSPECTS)) {
      this.clearSuspect();
      this.total = raw;
      this.last = raw;
      this.gap = false;
      return 'ok';
    }
    this.suspect = raw;
    this.suspects++;
    return 'reread';
  }

  private clearSuspect(): void {
    this.suspect = undefined;
    this.suspects = 0;
  }

  /** A plain step forward from the last believed reading. */
  private advance(raw: number): void {
    if (raw !== this.last) {
      const step = raw - this.last!;
      if (step >= 0) this.total += step;
      else this.believe(raw);
    }
    this.last = raw;
    this.gap = false;
  }

  /** A confirmed reading that is not a plain step: a jump forward, a wrap or a reset. */
  private believe(raw: number): void {
    const last = this.last!;
    if (raw >= last) {
      this.total += raw - last;
    } else if (!this.gap && last + NEAR >= WRAP && raw < NEAR) {
      this.total += raw + WRAP - last;
      this.onEvent({ kind: 'wrap' });
    } else if (raw < NEAR) {
      this.total += raw;
      this.onEvent({ kind: 'reset', added: raw });
    } else {
      // Backwards but far from zero: another board, or a counter set by someone else.
      this.onEvent({ kind: 'rebased', from: last, to: raw });
    }
    this.last = raw;
    this.gap = false;
  }
}
