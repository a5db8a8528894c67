import type { Clock, Timer } from '../../src/automations/clock.js';

// A clock the test moves by hand: monotonic and wall time advance together
// unless a test steps the wall clock alone (NTP, a manual set, DST is not one:
// it changes no instant).

export class FakeClock implements Clock {
  private mono = 1000;
  private timers: Array<{ due: number; run: () => void; cancelled: boolean }> = [];

  constructor(private wallMs: number) {}

  monotonic(): number {
    return this.mono;
  }

  wall(): number {
    return this.wallMs;
  }

  after(ms: number, run: () => void): Timer {
    const timer = { due: this.mono + ms, run, cancelled: false };
    this.timers.push(timer);
    return { cancel: () => void (timer.cancelled = true) };
  }

  /** Moves both clocks by `ms`, running the timers that fall due on the way, in order. */
  advance(ms: number): void {
    const end = this.mono + ms;
    for (;;) {
      const due = this.timers.filter((timer) => !timer.cancelled && timer.due <= end).sort((a, b) => a.due - b.due)[0];
      if (!due) break;
      this.wallMs += due.due - this.mono;
      this.mono = due.due;
      due.cancelled = true;
      this.timers = this.timers.filter((timer) => !timer.cancelled);
      due.run();
    }
    this.wallMs += end - this.mono;
    this.mono = end;
  }

  /** Steps the wall clock alone (NTP correction, manual set). */
  stepWall(ms: number): void {
    this.wallMs += ms;
  }

  /** Timers still pending. */
  get pending(): number {
    return this.timers.filter((timer) => !timer.cancelled).length;
  }
}
