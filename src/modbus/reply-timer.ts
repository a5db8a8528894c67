// The deadline of the transaction on the wire, as one timer per bus that is
// re-armed for each transaction rather than a new timer each time. A line
// carries hundreds of transactions a second; with a new timer per
// transaction, Node made (and dropped) a list for its delay and queued it
// every time the previous one had been cleared (bench/idle.mjs: timers were
// the largest part of a poll's cost after the I/O). Disarming only forgets
// the deadline: Node's timer runs out later and finds nothing to do.

export class ReplyTimer {
  private timer: NodeJS.Timeout | undefined;
  private armed = false;

  constructor(
    private readonly ms: number,
    private readonly onExpired: () => void,
  ) {}

  /** The transaction sent now must be answered within the bus's timeout. */
  arm(): void {
    this.armed = true;
    if (this.timer) this.timer.refresh();
    else this.timer = setTimeout(this.fire, this.ms);
  }

  /** The transaction ended (answered, failed or gone with the line). */
  disarm(): void {
    this.armed = false;
  }

  /** For good: nothing stays scheduled. */
  stop(): void {
    this.armed = false;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private readonly fire = (): void => {
    if (!this.armed) return;
    this.armed = false;
    this.onExpired();
  };
}
