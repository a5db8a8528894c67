import { RequestError } from '../registry/request-error.js';
import { AsyncLock, sleep } from './lock.js';
import { label, stateOf, type Output } from './output.js';

// A set of outputs of which at most one may be on, with a dwell after one goes
// off before another may go on. Every write that switches a member runs under
// the group's lock, and the check sees the confirmed state of the others, so
// two writes racing from two APIs are decided one after the other: the
// second sees the first output on and is refused (or, with switch_over, turns
// it off first). A member whose last write failed may have switched anyway;
// it is read back before another member goes on.

export class InterlockGroup {
  readonly lock = new AsyncLock();
  /** performance.now() when each member was last seen going off. */
  private readonly offAt = new Map<Output, number>();
  private readonly wasOn = new Map<Output, boolean>();
  /** Members whose last write failed: the board may or may not have switched. */
  private readonly inDoubt = new Set<Output>();

  constructor(
    /** `interlocks[0]` or `cover living_room`, for messages. */
    readonly name: string,
    readonly outputs: readonly Output[],
    readonly dwellMs: number,
    readonly switchOver: boolean,
  ) {}

  /** Follow a member's state as reads and writes report it; going off starts its dwell. */
  observe(output: Output): void {
    const on = stateOf(output) === 'on';
    if (this.wasOn.get(output) && !on) this.offAt.set(output, performance.now());
    this.wasOn.set(output, on);
  }

  /** Members on now (by the last confirmed state). */
  onMembers(): Output[] {
    return this.outputs.filter((output) => stateOf(output) === 'on');
  }

  writeFailed(output: Output): void {
    this.inDoubt.add(output);
  }

  writeConfirmed(output: Output): void {
    this.inDoubt.delete(output);
    this.observe(output);
  }

  /** Whether the member's last write failed, so the board may or may not have switched it. */
  isInDoubt(output: Output): boolean {
    return this.inDoubt.has(output);
  }

  /**
   * Call under the lock, before switching `target` on: every other member
   * must be off (switched off here when the group says switch_over), and the
   * dwell since the last of them went off must have passed.
   */
  async clearFor(target: Output, switchOff: (output: Output) => Promise<void>): Promise<void> {
    for (const other of this.outputs) {
      if (other === target) continue;
      if (this.inDoubt.has(other)) await this.readBack(other, target);
      if (!this.mustSwitchOff(target, other)) continue;
      await switchOff(other);
      this.writeConfirmed(other);
    }
    // A timer may fire a fraction of a millisecond early: wait until the dwell has truly passed.
    for (let wait = this.dwellLeft(target); wait > 0; wait = this.dwellLeft(target)) await sleep(Math.ceil(wait));
  }

  /**
   * Call under the lock: whether `target` may go on once the members in
   * `leaving` are off, without switching anything (a write that moves several
   * outputs decides on all of them before it writes any). Throws the 409 that
   * clearFor would.
   */
  async check(target: Output, leaving: ReadonlySet<Output>): Promise<void> {
    for (const other of this.outputs) {
      if (other === target || leaving.has(other)) continue;
      if (this.inDoubt.has(other)) await this.readBack(other, target);
      this.mustSwitchOff(target, other);
    }
  }

  /** Whether `other` is on and the group switches it over; refuses (409) when it is unknown or on without switch_over. */
  private mustSwitchOff(target: Output, other: Output): boolean {
    const state = stateOf(other);
    if (state === 'unknown') {
      const why = other.unavailable() ?? 'not read yet';
      throw new RequestError(409, 'InterlockError', `${label(target)} stays off: the state of ${label(other)}, interlocked with it (${this.name}), is unknown (${why})`);
    }
    if (state === 'off') return false;
    if (!this.switchOver) {
      throw new RequestError(409, 'InterlockError', `${label(target)} stays off: ${label(other)} is on and interlocked with it (${this.name}); switch ${label(other)} off first`);
    }
    return true;
  }

  /** Ms until `target` may go on; the dwell counts from the last other member going off. */
  dwellLeft(target: Output): number {
    let until = 0;
    for (const [output, at] of this.offAt) if (output !== target) until = Math.max(until, at + this.dwellMs);
    return Math.max(0, until - performance.now());
  }

  private async readBack(other: Output, target: Output): Promise<void> {
    try {
      await other.readBack();
      this.inDoubt.delete(other);
      this.observe(other);
    } catch (error) {
      throw new RequestError(409, 'InterlockError', `${label(target)} stays off: a write to ${label(other)}, interlocked with it (${this.name}), failed and its state cannot be read back (${(error as Error).message})`);
    }
  }
}
