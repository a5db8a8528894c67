// The fixed-rate grid the scans run on: slot n comes at t0 + n·period, so
// timer lateness never accumulates into drift. Slaves scanned at the same
// period share one grid and one timer: at EVOK's 50 Hz, a timer per slave was
// one timer set and fired per scan, the most frequent thing the daemon did
// when no client asked anything (bench/idle.mjs). Each slave still decides
// for itself what a slot means (its scan may still be running), so a slow
// slave makes no other slave late.

export interface ScanClockMember {
  /**
   * A slot came. `missed`: slots before it that passed while the process
   * was stalled (or the timer was late by more than a period), skipped.
   */
  slot(missed: number): void;
}

export class ScanClock {
  private static readonly byPeriod = new Map<number, ScanClock>();
  private readonly members = new Set<ScanClockMember>();
  private timer: NodeJS.Timeout | undefined;
  /** The delay the timer was last armed with. */
  private delay = -1;
  private origin = 0;
  private slotNumber = 0;

  private constructor(private readonly periodMs: number) {}

  /** Starts giving `member` the slots of `periodMs` (after the one it takes itself at once). */
  static join(periodMs: number, member: ScanClockMember): ScanClock {
    let clock = ScanClock.byPeriod.get(periodMs);
    if (!clock) ScanClock.byPeriod.set(periodMs, (clock = new ScanClock(periodMs)));
    clock.add(member);
    return clock;
  }

  leave(member: ScanClockMember): void {
    this.members.delete(member);
    if (this.members.size > 0) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.delay = -1;
    ScanClock.byPeriod.delete(this.periodMs);
  }

  private add(member: ScanClockMember): void {
    this.members.add(member);
    if (this.timer) return;
    this.origin = performance.now();
    this.slotNumber = 0;
    this.scheduleNext();
  }

  private readonly fire = (): void => {
    const missed = this.scheduleNext();
    for (const member of this.members) member.slot(missed);
  };

  /** Arms the timer for the next slot; returns how many slots were skipped because they had already passed. */
  private scheduleNext(): number {
    const now = performance.now();
    this.slotNumber++;
    let due = this.origin + this.slotNumber * this.periodMs;
    // The next slot, if already past, still comes at once; older ones are skipped.
    const missed = Math.max(0, Math.floor((now - due) / this.periodMs));
    if (missed > 0) {
      this.slotNumber += missed;
      due = this.origin + this.slotNumber * this.periodMs;
    }
    // The same timer is re-armed with the same delay while that is within a
    // millisecond of the grid (as it is while slots come on time; Node's
    // timers count whole milliseconds anyway), and the next slot corrects any
    // error, so it never adds up. Node keeps a list of timers per distinct
    // delay and drops it once empty: a new timer with a new (say fractional)
    // delay cost a timer and a list, queued and dropped, every slot.
    if (this.timer && Math.abs(due - now - this.delay) <= 1) {
      this.timer.refresh();
    } else {
      const delay = Math.max(1, Math.round(due - now));
      clearTimeout(this.timer);
      this.timer = setTimeout(this.fire, delay);
      this.delay = delay;
    }
    return missed;
  }
}
