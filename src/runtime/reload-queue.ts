// One reload at a time: a reload asked for while one runs waits for it and
// then reads the file again, since the file may have changed meanwhile. The
// requests that arrive while one already waits share it: it reads the file as
// each of them would, so a storm of SIGHUPs costs at most two reloads, not one
// each. Start-up counts as running: a SIGHUP during it waits for it.

export class ReloadQueue<T> {
  /** The reload (or start-up) in progress; settled when none is. */
  private running: Promise<unknown> = Promise.resolve();
  /** The reload that waits for the running one, shared by every request made meanwhile. */
  private waiting: Promise<T> | undefined;

  constructor(private readonly apply: () => Promise<T>) {}

  /** Runs a reload after the one in progress, or shares the one already waiting. */
  request(): Promise<T> {
    if (this.waiting) return this.waiting;
    const begin = (): Promise<T> => {
      // From here on the file is being read: a later request needs a reload of its own.
      if (this.waiting === run) this.waiting = undefined;
      return this.apply();
    };
    const run = this.running.then(begin, begin);
    this.waiting = run;
    this.running = run.catch(() => undefined);
    return run;
  }

  /** Work that reloads must wait for (start-up), whatever its outcome. */
  waitFor(work: Promise<unknown>): void {
    this.running = work.catch(() => undefined);
  }
}
