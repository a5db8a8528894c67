// The engine's sense of time, injected so tests can drive it. Timers and
// durations use the monotonic clock (a wall-clock step never shortens or
// lengthens a staircase or a delay); only schedules read the wall clock.

export interface Timer {
  cancel(): void;
}

export interface Clock {
  /** Monotonic ms (performance.now()). */
  monotonic(): number;
  /** Wall-clock ms since the epoch (Date.now()). */
  wall(): number;
  /** Calls `run` once after `ms` of monotonic time. */
  after(ms: number, run: () => void): Timer;
}

export const systemClock: Clock = {
  monotonic: () => performance.now(),
  wall: () => Date.now(),
  after(ms, run) {
    // Node's timers run on the monotonic clock; a timer of a day is split by its users, never here.
    const handle = setTimeout(run, Math.max(0, Math.min(ms, 2 ** 31 - 1)));
    handle.unref();
    return { cancel: () => clearTimeout(handle) };
  },
};
