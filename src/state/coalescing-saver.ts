// Saves a piece of state shortly after it changes, for every kind of state
// that must survive a restart.
import { firstLine } from './first-line.js';

/**
 * Changes within `delayMs` of each other cost one write, at most one write
 * runs at a time, and the state is read (through the snapshot callback) when
 * the write starts, so the newest state is what lands on disk. The daemon
 * calls flush() when stopping, so a clean stop loses nothing; after a crash
 * at most `delayMs` of changes are lost.
 */
export class CoalescingSaver<T> {
  private timer: NodeJS.Timeout | undefined;
  /** Set while there are unsaved changes. */
  private pending: (() => T) | undefined;
  private writing: Promise<void> | undefined;

  constructor(
    /** What is saved, for the log line of a failed save (e.g. 'aliases to /var/lib/evok/alias.yaml'). */
    private readonly what: string,
    private readonly write: (value: T) => Promise<void>,
    private readonly delayMs = 1000,
    private readonly log: (message: string) => void = (message) => console.error(message),
  ) {}

  markDirty(snapshot: () => T): void {
    this.pending = snapshot;
    if (this.timer !== undefined) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.save();
    }, this.delayMs);
    // Shutdown goes through flush(); the timer alone must not keep the process alive.
    this.timer.unref();
  }

  /** True while a change waits to be written. */
  get dirty(): boolean {
    return this.pending !== undefined;
  }

  /** Writes unsaved changes now; resolves when the file is up to date (or the write failed and was logged). */
  async flush(): Promise<void> {
    this.cancelTimer();
    await this.save();
  }

  /** Writes unsaved changes now and rejects with the reason when the file could not be written. */
  async flushOrThrow(): Promise<void> {
    this.cancelTimer();
    const failure = await this.save();
    if (failure !== undefined) throw failure;
  }

  private cancelTimer(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** The error of a failed write (logged, and the changes kept for the next try), else undefined. */
  private async save(): Promise<Error | undefined> {
    while (this.writing !== undefined) await this.writing;
    const snapshot = this.pending;
    if (snapshot === undefined) return undefined;
    this.pending = undefined;
    let failure: Error | undefined;
    this.writing = Promise.resolve()
      .then(() => this.write(snapshot()))
      .catch((error: unknown) => {
        failure = error instanceof Error ? error : new Error(String(error));
        this.log(`Saving ${this.what} failed: ${firstLine(error)}`);
        // Still unsaved: the next change or flush() tries again.
        this.pending ??= snapshot;
      })
      .finally(() => {
        this.writing = undefined;
      });
    await this.writing;
    return failure;
  }
}
