import type { Logger } from '../logging/log.js';
import { label, type Output } from './output.js';

// Switching an output off for safety (a pulse's end, a cover lost mid-run, an
// interlock found broken, a restart after a crash) must not be given up when
// the board does not answer: the off is tried again every second until it
// lands, typically when the board is back. Only the off is retried; an on is
// never replayed. A client's later write to the output cancels the retry.

const RETRY_MS = 1000;

interface Pending {
  why: string;
  attempts: number;
  timer: NodeJS.Timeout | undefined;
  done: (() => void) | undefined;
}

/** `stillWanted` is asked under the output's locks, just before the write: false when a later write took over. */
export type SwitchOff = (output: Output, stillWanted: () => boolean) => Promise<unknown>;

export class FailSafeOffs {
  private readonly pending = new Map<Output, Pending>();

  constructor(
    private readonly switchOff: SwitchOff,
    private readonly log: Logger,
  ) {}

  has(output: Output): boolean {
    return this.pending.has(output);
  }

  /** `done` runs once the off landed (not when a later write cancelled it). */
  request(output: Output, why: string, done?: () => void): void {
    const existing = this.pending.get(output);
    if (existing) {
      existing.why = why;
      const before = existing.done;
      if (done) existing.done = before ? () => (before(), done()) : done;
      return;
    }
    const entry: Pending = { why, attempts: 0, timer: undefined, done };
    this.pending.set(output, entry);
    void this.attempt(output, entry);
  }

  cancel(output: Output): void {
    const entry = this.pending.get(output);
    if (!entry) return;
    clearTimeout(entry.timer);
    this.pending.delete(output);
  }

  stop(): void {
    for (const entry of this.pending.values()) clearTimeout(entry.timer);
    this.pending.clear();
  }

  private async attempt(output: Output, entry: Pending): Promise<void> {
    const current = () => this.pending.get(output) === entry;
    try {
      await this.switchOff(output, current);
    } catch (error) {
      if (!current()) return;
      entry.attempts++;
      if (entry.attempts === 1) {
        this.log.warn(`${label(output)}: switching it off failed (${(error as Error).message}); trying again every ${RETRY_MS / 1000} s until it lands (${entry.why})`);
      }
      entry.timer = setTimeout(() => void this.attempt(output, entry), RETRY_MS);
      entry.timer.unref();
      return;
    }
    if (!current()) return;
    this.pending.delete(output);
    if (entry.attempts > 0) this.log.info(`${label(output)}: switched off after ${entry.attempts + 1} attempts (${entry.why})`);
    entry.done?.();
  }
}
