// When the next frame may go on a Modbus line. After each frame an RTU line
// must stay silent for t3.5 (the link's silenceMs) before the next one, and
// after a timeout of a unit known to answer late the line is held for as
// long as its replies were late, so on RS485 its late reply does not collide
// with the next transaction. The bus asks how long to wait; while held,
// nothing is sent, and once the line is free the bus is told to go on.

export class LineHold {
  /** performance.now() of the last frame seen or given up on: the silence counts from here. */
  private lastFrameAt = 0;
  /** performance.now() until which nothing is sent: a late unit's reply may still come. */
  private holdUntil = 0;
  private holdUnit = -1;
  /** Whether the line is held before the next frame (RTU silence, a late unit's reply). */
  private waiting = false;
  /** The silence after a frame: one timer per bus, re-armed for each transaction rather than a new one each time. */
  private silenceTimer: NodeJS.Timeout | undefined;
  /** A longer hold (a late unit's reply may be on its way). */
  private holdTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly link: { readonly silenceMs: number },
    /** Told when a hold ends by itself: the next frame may go. */
    private readonly onFree: () => void,
  ) {}

  /** Whether the line is held now: nothing may be sent until it is free. */
  get held(): boolean {
    return this.waiting;
  }

  /** A frame ended on the line (or its reply was given up on): the silence starts now. */
  frameEnded(): void {
    this.lastFrameAt = performance.now();
  }

  /** How long, ms, until the next frame may go (0 or less: now). */
  waitMs(): number {
    return Math.max(this.lastFrameAt + this.link.silenceMs, this.holdUntil) - performance.now();
  }

  /** Nothing is sent before `until` (performance.now()): `unit`'s late reply may be on its way. */
  holdForLateReply(unit: number, until: number): void {
    this.holdUntil = until;
    this.holdUnit = unit;
  }

  /** `unit`'s late reply came at `now`: if the line was held for it, it is free. */
  lateReplyCame(unit: number, now: number): void {
    if (this.holdUnit === unit && this.holdUntil > now) {
      this.holdUntil = now;
      this.clear();
    }
  }

  /**
   * Sends nothing for `wait` ms. The usual wait is the silence after a frame,
   * begun a moment ago: the bus's one timer of that length is re-armed, a
   * hair longer than needed at most. Node made and dropped a timer object
   * for each new one, on every transaction.
   */
  hold(wait: number): void {
    this.waiting = true;
    const silence = this.link.silenceMs;
    // Whole milliseconds: Node's timers run on the loop's clock, which counts
    // whole milliseconds, so a timer of 1.75 ms and one of 2 ms run at the
    // same turn of the loop. But Node asks libuv for the fraction cut off
    // (1 ms), wakes, finds the timer not due and sleeps again: a wake-up of
    // the whole process for nothing on every transaction.
    if (wait <= silence) {
      if (this.silenceTimer) this.silenceTimer.refresh();
      else this.silenceTimer = setTimeout(this.lineFree, Math.ceil(silence));
    } else {
      clearTimeout(this.holdTimer);
      this.holdTimer = setTimeout(this.lineFree, Math.ceil(wait));
    }
  }

  private readonly lineFree = (): void => {
    if (!this.waiting) return;
    this.waiting = false;
    // Whichever timer fired first, the other one has nothing left to hold.
    clearTimeout(this.holdTimer);
    this.holdTimer = undefined;
    this.onFree();
  };

  /** The line is no longer held (dropped, stopped, or the awaited late reply came). */
  clear(): void {
    this.waiting = false;
    // A cleared timer cannot be re-armed: the next hold makes a new one.
    clearTimeout(this.silenceTimer);
    this.silenceTimer = undefined;
    clearTimeout(this.holdTimer);
    this.holdTimer = undefined;
  }
}
