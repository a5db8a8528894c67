import { RequestError } from '../errors.js';

// Lets shutdown wait for writes already sent to a slave, so a client that got
// its write accepted also gets the slave's confirmation, while refusing writes
// that arrive once shutdown has begun.

export class WriteGate {
  private readonly pending = new Set<Promise<unknown>>();
  private closed = false;

  get inFlight(): number {
    return this.pending.size;
  }

  /** Runs `write` unless the gate is closed, and remembers it until it settles. */
  pass<T>(write: () => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new RequestError(503, 'ShuttingDown', 'iogate is shutting down; the write was not sent'));
    const running = write();
    this.pending.add(running);
    const forget = () => this.pending.delete(running);
    running.then(forget, forget);
    return running;
  }

  /** Closes the gate; resolves true when every earlier write settled, false if `timeoutMs` ran out first. */
  async drain(timeoutMs: number): Promise<boolean> {
    this.closed = true;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)));
    const settled = Promise.allSettled([...this.pending]).then(() => true as const);
    try {
      return await Promise.race([settled, timedOut]);
    } finally {
      clearTimeout(timer);
    }
  }
}

/** The daemon's one gate: every API writes through writeDevice, which passes here. */
export const writeGate = new WriteGate();
