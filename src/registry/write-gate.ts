import { RequestError } from './request-error.js';

// Lets shutdown wait for writes already sent to a slave, so a client that got
// its write accepted also gets the slave's confirmation, while refusing writes
// that arrive once shutdown has begun.

// Writes in flight are counted, not kept in a Set: a long-lived Set that
// gains and loses an entry per write has V8 reallocate its hash table every
// few writes, in the old generation where the Set lives, and under a stream
// of writes those tables piled up as garbage until the next mark-compact
// (bench: heap sampling under POST load).
export class WriteGate {
  private running = 0;
  private closed = false;
  /** Told when the last write in flight settles (drain). */
  private readonly idleWaiters: Array<() => void> = [];
  private readonly settled = (): void => {
    if (--this.running === 0) for (const waiter of this.idleWaiters.splice(0)) waiter();
  };

  get inFlight(): number {
    return this.running;
  }

  /** Runs `write` unless the gate is closed, and counts it until it settles. */
  pass<T>(write: () => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new RequestError(503, 'ShuttingDown', 'iogate is shutting down; the write was not sent'));
    const running = write();
    this.running++;
    running.then(this.settled, this.settled);
    return running;
  }

  /** Closes the gate; resolves true when every earlier write settled, false if `timeoutMs` ran out first. */
  async drain(timeoutMs: number): Promise<boolean> {
    this.closed = true;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)));
    const settled = this.running === 0 ? Promise.resolve(true as const) : new Promise<true>((resolve) => this.idleWaiters.push(() => resolve(true)));
    try {
      return await Promise.race([settled, timedOut]);
    } finally {
      clearTimeout(timer);
    }
  }
}

/** The daemon's one gate: every API writes through writeDevice, which passes here. */
export const writeGate = new WriteGate();
