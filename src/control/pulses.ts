import { RequestError } from '../registry/request-error.js';
import type { ControlState } from './control-state.js';
import { reference, type Output } from './output.js';

// Timed pulses (`value=1&pulse_ms=N`): the daemon switches the output off
// after N ms, whatever happens to the client. The pulse is noted in the state
// file before the output goes on and forgotten once the off has landed, so a
// restart in between finds it and switches the output off (fail safe). A
// pulse that cannot be noted (state directory read-only or full) is refused
// before the output goes on: after a crash nothing would switch it off.

export class PulseTimers {
  private readonly timers = new Map<Output, NodeJS.Timeout>();

  constructor(
    private readonly state: ControlState,
    /** Switch off (retried until it lands), then call `done`. */
    private readonly end: (output: Output, why: string, done: () => void) => void,
  ) {}

  has(output: Output): boolean {
    return this.timers.has(output);
  }

  running(): Output[] {
    return [...this.timers.keys()];
  }

  /** Before the output goes on: the restart after a crash must know. Throws (507) when the note cannot be written. */
  async noteBefore(output: Output, ms: number): Promise<void> {
    const ref = reference(output);
    const before = this.state.pulseOf(ref);
    this.state.setPulse(ref, Date.now() + ms);
    try {
      await this.state.saveOrThrow();
    } catch (error) {
      // The output is not switched, so the note goes (a running pulse keeps its own).
      this.state.setPulse(ref, before);
      throw new RequestError(507, 'OSError', `pulse refused, ${ref} not switched: the pulse could not be noted in the state directory, so a restart after a crash could not switch it off (${(error as Error).message})`);
    }
  }

  /** The write that was to start the pulse failed. */
  forget(output: Output): void {
    if (!this.timers.has(output)) this.state.setPulse(reference(output), undefined);
  }

  arm(output: Output, ms: number): void {
    clearTimeout(this.timers.get(output));
    const endsAt = performance.now() + ms;
    const fire = () => {
      // A timer may fire a fraction of a millisecond early; the pulse is never shorter than asked.
      const left = endsAt - performance.now();
      if (left > 0) {
        this.timers.set(output, setTimeout(fire, Math.ceil(left)));
        return;
      }
      this.timers.delete(output);
      this.end(output, `pulse of ${ms} ms on ${reference(output)} ended`, () => {
        if (!this.timers.has(output)) this.state.setPulse(reference(output), undefined);
      });
    };
    this.timers.set(output, setTimeout(fire, ms));
  }

  /**
   * The output's device is taken out (a reload rebuilds its bus): its timer
   * goes, the note stays until the caller's off has landed. True if a pulse was running.
   */
  drop(output: Output): boolean {
    const timer = this.timers.get(output);
    if (timer === undefined) return false;
    clearTimeout(timer);
    this.timers.delete(output);
    return true;
  }

  /** A later write to the output: no off is pending any more. */
  cancel(output: Output): void {
    const timer = this.timers.get(output);
    clearTimeout(timer);
    this.timers.delete(output);
    this.state.setPulse(reference(output), undefined);
  }
}
