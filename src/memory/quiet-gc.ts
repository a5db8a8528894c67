// Full garbage collections when a burst of HTTP requests is over.
//
// V8 gives back the pages a burst of work left behind through its memory
// reducer: a few collections started once the program goes quiet. But after
// its first runs the reducer re-arms only when a mark-compact finds the
// committed old generation well above where its last run left it (V8's
// memory-reducer.cc: by 10 MB and 10 %). Since the write path stopped
// filling the old generation, iogate's (about 10 MB live) no longer grows
// that far, so after a burst of requests nothing collected the garbage it
// left: private memory (RssAnon) 30 s after the bench's load was 6-10 MB
// above idle, without a single mark-compact in those 30 s (--trace-gc). Two full collections
// when the request rate drops (about 15 ms each on the bench's 2 cores, once
// per burst, at most once in 10 s) bring it to about 3 MB above idle.
//
// It needs V8's gc() (node --expose-gc, set in deploy/iogate.service);
// without it nothing happens. After the collections, `afterCollect` (the
// malloc_trim addon, src/memory/malloc-trim.ts) gives back the C heap the
// freed buffers leave: after a write load that was 2-3 MB of glibc's heap
// that V8's collections cannot return.

/** A second with at least this many requests counts as busy. */
export const BUSY_REQUESTS_PER_TICK = 500;
/** After a busy second, one with fewer requests than this is the end of the burst. */
export const QUIET_REQUESTS_PER_TICK = 50;
/** At most one collection in this many ticks, whatever the traffic looks like. */
export const MIN_TICKS_BETWEEN = 10;

/** Decides, one tick (second) at a time, when a burst is over; the timer is the caller's. */
export class QuietCollector {
  private busy = false;
  private ticksSince = MIN_TICKS_BETWEEN;
  collections = 0;

  constructor(private readonly collect: () => void) {}

  /** `requests`: how many came in during the tick just over. True when it collected. */
  tick(requests: number): boolean {
    this.ticksSince++;
    if (requests >= BUSY_REQUESTS_PER_TICK) {
      this.busy = true;
      return false;
    }
    if (!this.busy || requests >= QUIET_REQUESTS_PER_TICK || this.ticksSince < MIN_TICKS_BETWEEN) return false;
    this.busy = false;
    this.ticksSince = 0;
    this.collections++;
    this.collect();
    return true;
  }
}

/** V8's gc(), when node runs with --expose-gc; then `afterCollect`. */
export function exposedGc(afterCollect?: () => void): (() => void) | undefined {
  const gc = (globalThis as { gc?: unknown }).gc;
  if (typeof gc !== 'function') return undefined;
  // The first collection frees the garbage; the second compacts the pages it
  // left sparse and gives them back (--trace-gc: committed heap 18.0 -> 13.8
  // -> 11.8 MB; a third changed nothing).
  return () => {
    (gc as () => void)();
    (gc as () => void)();
    afterCollect?.();
  };
}

/**
 * Reads the server's request count once a tick and collects once per burst;
 * returns undefined without gc(). `requestsSeen` is a running total kept by
 * someone already on the request path: a listener of our own would cost every request.
 */
export function collectAfterBursts(requestsSeen: () => number, afterCollect?: () => void, tickMs = 1000): QuietCollector | undefined {
  const gc = exposedGc(afterCollect);
  if (!gc) return undefined;
  const collector = new QuietCollector(gc);
  let counted = requestsSeen();
  setInterval(() => {
    const total = requestsSeen();
    const seen = total - counted;
    counted = total;
    collector.tick(seen);
  }, tickMs).unref();
  return collector;
}
