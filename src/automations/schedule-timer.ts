import type { Clock, Timer } from './clock.js';
import { nextRun } from './schedule.js';
import type { LocationConfig, Trigger } from './types.js';

// Runs time triggers at their wall-clock times with one monotonic timer for
// all of them (ScheduleWheel): it sleeps in steps of at most a minute and
// looks at the wall clock on each wake, so a wall-clock step (NTP at boot, a manual set) is noticed within
// a minute. What a step does (docs/adr/0001-automation-semantics.md):
// - forward past a run: the run is skipped if it is more than LATE_MS late,
//   and the log says so (nothing fires for a time that was jumped over);
// - backward over a run that already fired: it does not fire again (the
//   next run is computed from the last one, not from the clock).

/** A run may start this late (a busy event loop, a wake-up step) and still fire. */
export const LATE_MS = 60_000;
const STEP_MS = 60_000;

type TimeTrigger = Extract<Trigger, { kind: 'time' }>;

/**
 * One monotonic timer for all the schedules of an engine: it wakes at the
 * earliest run due, or a minute on to look at the wall clock, whichever is
 * first, and lets each schedule check whether its run came. 1,000 idle
 * schedules cost one wake a minute, not 1,000.
 */
export class ScheduleWheel {
  private readonly members = new Set<ScheduleTimer>();
  private timer: Timer | undefined;
  /** Wall-clock ms the armed timer wakes at. */
  private wakeAt = Infinity;

  constructor(private readonly clock: Clock) {}

  /** `member` waits for its `next` run: the wheel wakes for it, if no earlier wake is armed. */
  request(member: ScheduleTimer): void {
    this.members.add(member);
    if (member.next === undefined) return;
    const now = this.clock.wall();
    const at = Math.min(member.next, now + STEP_MS);
    if (this.timer !== undefined && this.wakeAt <= at) return;
    this.arm(now, at);
  }

  remove(member: ScheduleTimer): void {
    this.members.delete(member);
    if (this.members.size === 0) this.cancel();
  }

  private arm(now: number, at: number): void {
    this.timer?.cancel();
    this.wakeAt = at;
    this.timer = this.clock.after(Math.max(0, at - now), () => this.wake());
  }

  private cancel(): void {
    this.timer?.cancel();
    this.timer = undefined;
    this.wakeAt = Infinity;
  }

  private wake(): void {
    this.timer = undefined;
    this.wakeAt = Infinity;
    // A copy: a run may enable or disable other automations, adding or removing members.
    for (const member of [...this.members]) member.check();
    const now = this.clock.wall();
    let at = Infinity;
    for (const member of this.members) if (member.next !== undefined && member.next < at) at = member.next;
    if (at !== Infinity) this.arm(now, Math.min(at, now + STEP_MS));
  }
}

export class ScheduleTimer {
  private readonly wheel: ScheduleWheel;
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
    /** The engine's shared wheel; a schedule on its own gets its own. */
    wheel?: ScheduleWheel,
  ) {
    this.wheel = wheel ?? new ScheduleWheel(clock);
  }

  start(): void {
    this.next = nextRun(this.trigger, this.clock.wall(), this.zone, this.location);
    this.changed();
    this.wheel.request(this);
  }

  stop(): void {
    this.wheel.remove(this);
  }

  /** The wheel woke: fires (or skips) the run if its time came. */
  check(): void {
    const due = this.next;
    if (due === undefined) return;
    const now = this.clock.wall();
    if (now < due) return;
    this.next = nextRun(this.trigger, due, this.zone, this.location);
    // A clock set far forward can leave `next` in the past too: skip to the first run after now.
    if (this.next !== undefined && this.next <= now - LATE_MS) this.next = nextRun(this.trigger, now, this.zone, this.location);
    this.changed();
    if (now - due <= LATE_MS) this.fire(`it is ${new Date(due).toISOString()}`);
    else this.skipped(`the run of ${new Date(due).toISOString()} was skipped: the wall clock jumped past it (now ${new Date(now).toISOString()})`);
  }
}
