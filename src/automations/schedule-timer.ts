import type { Clock, Timer } from './clock.js';
import { nextRun } from './schedule.js';
import type { LocationConfig, Trigger } from './types.js';

// Runs a time trigger at its wall-clock times with monotonic timers: it
// sleeps in steps of at most a minute and looks at the wall clock on each
// wake, so a wall-clock step (NTP at boot, a manual set) is noticed within
// a minute. What a step does (docs/adr/0001-automation-semantics.md):
// - forward past a run: the run is skipped if it is more than LATE_MS late,
//   and the log says so (nothing fires for a time that was jumped over);
// - backward over a run that already fired: it does not fire again (the
//   next run is computed from the last one, not from the clock).

/** A run may start this late (a busy event loop, a wake-up step) and still fire. */
export const LATE_MS = 60_000;
const STEP_MS = 60_000;

type TimeTrigger = Extract<Trigger, { kind: 'time' }>;

export class ScheduleTimer {
  private timer: Timer | undefined;
  /** The run being waited for (UTC ms); undefined when none is due within a year. */
  next: number | undefined;

  constructor(
    private readonly trigger: TimeTrigger,
    private readonly zone: string,
    private readonly location: LocationConfig,
    private readonly clock: Clock,
    private readonly fire: (cause: string) => void,
    private readonly skipped: (why: string) => void,
    /** Told when `next` changed, so the device shows it. */
    private readonly changed: () => void,
  ) {}

  start(): void {
    this.next = nextRun(this.trigger, this.clock.wall(), this.zone, this.location);
    this.changed();
    this.arm();
  }

  stop(): void {
    this.timer?.cancel();
    this.timer = undefined;
  }

  private arm(): void {
    this.timer?.cancel();
    if (this.next === undefined) return;
    this.timer = this.clock.after(Math.max(0, Math.min(STEP_MS, this.next - this.clock.wall())), () => this.wake());
  }

  private wake(): void {
    this.timer = undefined;
    const due = this.next;
    if (due === undefined) return;
    const now = this.clock.wall();
    if (now < due) {
      this.arm();
      return;
    }
    this.next = nextRun(this.trigger, due, this.zone, this.location);
    // A clock set far forward can leave `next` in the past too: skip to the first run after now.
    if (this.next !== undefined && this.next <= now - LATE_MS) this.next = nextRun(this.trigger, now, this.zone, this.location);
    this.changed();
    if (now - due <= LATE_MS) this.fire(`it is ${new Date(due).toISOString()}`);
    else this.skipped(`the run of ${new Date(due).toISOString()} was skipped: the wall clock jumped past it (now ${new Date(now).toISOString()})`);
    this.arm();
  }
}
