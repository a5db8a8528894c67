// How fast, and in what order, the server starts its clients' requests. A
// reply from the poll cache costs the daemon tens of µs and no line time, so
// nothing on the line bounds clients that read the cache as fast as they can.
// Served as their bytes arrived, each turn of the event loop answered every
// request that had come in (ten clients pipelining eight requests each made
// turns of eighty replies), and the daemon became a process that never
// sleeps: on a busy machine the scheduler then lets it wait for the CPU each
// time a poll's reply, a scan timer, an HTTP request or a WebSocket push comes,
// and polling lost its rate. So requests are started:
//  - at most `rate` a second, all connections together (a token bucket that
//    holds a burst of BURST_MS worth): a site's masters poll a few hundred
//    requests a second at most, and a flood now costs a bounded share of a
//    core whatever the number of clients;
//  - from the loop's check phase, after its I/O, at most REQUESTS_PER_TURN a
//    turn: what else came in meanwhile waits behind those few, not behind
//    every client's;
//  - one per connection in turn (a connection with more waiting goes to the
//    back), so no client takes the others' share.
// Below the rate a request is started in the turn it arrived, as before.

/** Modbus requests started per turn of the event loop, all connections together. */
export const REQUESTS_PER_TURN = 4;
/** The default of `apis.modbus_server.max_requests_per_second`. */
export const DEFAULT_MAX_REQUESTS_PER_SECOND = 2000;
/** The bucket holds this long's worth of requests: a master's burst of reads after a pause goes at once. */
const BURST_MS = 20;
/** Out of tokens, the pacer sleeps until this long's worth is back. */
const WAKE_MS = 10;

export class RequestPacer {
  /** Connections with a request to start, each at most once, in the order they asked. */
  private readonly ready: Array<() => void> = [];
  private readonly burst: number;
  private readonly batch: number;
  private tokens: number;
  private filledAt = performance.now();
  private immediate: NodeJS.Immediate | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly ratePerSecond: number) {
    this.burst = Math.max(REQUESTS_PER_TURN, Math.round((ratePerSecond * BURST_MS) / 1000));
    this.tokens = this.burst;
    this.batch = Math.max(REQUESTS_PER_TURN, Math.round((ratePerSecond * WAKE_MS) / 1000));
  }

  /** `start` runs in a later check phase of the loop, after the connections queued before it. */
  enqueue(start: () => void): void {
    this.ready.push(start);
    this.schedule();
  }

  /** Drops a connection's place (it closed). */
  remove(start: () => void): void {
    const index = this.ready.indexOf(start);
    if (index >= 0) this.ready.splice(index, 1);
  }

  /** Nothing more runs (the server stopped). */
  stop(): void {
    this.ready.length = 0;
    if (this.immediate) clearImmediate(this.immediate);
    clearTimeout(this.timer);
    this.immediate = this.timer = undefined;
  }

  private refill(): void {
    const now = performance.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.filledAt) * this.ratePerSecond) / 1000);
    this.filledAt = now;
  }

  private schedule(): void {
    if (this.immediate || this.timer || this.ready.length === 0) return;
    this.refill();
    if (this.tokens >= 1) {
      this.drainLater();
    } else {
      // Out of tokens: sleep until WAKE_MS worth is back, then serve them over a few turns. A
      // wake-up costs more than a reply, and the timer counts whole milliseconds on the loop's
      // clock (read when the turn began), so it fires up to a millisecond early or late: waiting
      // for one turn's worth lost a quarter of the rate to that.
      const missing = Math.min(this.batch, this.burst) - this.tokens;
      this.timer = setTimeout(this.drainLater, Math.max(1, Math.ceil((missing * 1000) / this.ratePerSecond)));
    }
  }

  /**
   * The drain runs in the check phase, once a turn: set from a check-phase
   * callback (the drain before), an immediate runs in the next turn, after
   * the I/O that came meanwhile; set from the timer, in this turn's.
   */
  private readonly drainLater = (): void => {
    this.timer = undefined;
    this.immediate = setImmediate(this.drain);
  };

  private readonly drain = (): void => {
    this.immediate = undefined;
    this.refill();
    for (let started = 0; started < REQUESTS_PER_TURN && this.tokens >= 1 && this.ready.length > 0; started++) {
      this.tokens--;
      this.ready.shift()!();
    }
    this.schedule();
  };
}
