import { ScanClock, type ScanClockMember } from './scan-clock.js';
import type { SlaveUnit } from './slave-unit.js';

// Drives one slave's scans on the fixed-rate grid of its period
// (scan-clock.ts), which it shares with the other slaves of that period.
// Overrun policy: a slot that comes while the previous scan is still running,
// or that the process was stalled past, is not lost: one such scan runs as
// soon as possible. Further missed slots are skipped (and counted) rather than run
// back to back, so a slow bus never builds a backlog of more than one scan.
// Under HTTP load a saturated event loop often runs a few ms late; losing the
// slot each time cost 3-5 % of the poll rate (bench), keeping one costs none.

/** How often a read-once slave that has not answered yet is tried again. */
const ONCE_RETRY_MS = 250;

/**
 * Pause between the scans of an unthrottled slave (scan_frequency 0, "as
 * fast as the line allows"). On a real line a scan waits for the wire; on
 * the in-memory simulator or a fast gateway, scans back to back ran 84,000 to
 * 98,000 times a second on half a core or more. A 1 ms timer between scans
 * caps that at under 1,000 scans a second (about 550 and 10 % of a core for a
 * Brain board) and leaves the event loop to the APIs.
 */
export const UNTHROTTLED_GAP_MS = 1;

export class ScanLoop implements ScanClockMember {
  /** Retries of a read-once slave and the pauses of an unthrottled one. */
  private timer: NodeJS.Timeout | undefined;
  private clock: ScanClock | undefined;
  private running = false;
  /** A slot came while a scan was running; it runs when that scan is done. */
  private deferred = false;
  private stopped = true;

  constructor(
    private readonly slave: SlaveUnit,
    private readonly periodMs: number,
    private readonly repeat: boolean,
  ) {}

  start(): void {
    this.stopped = false;
    this.tick();
    if (this.repeat && this.periodMs > 0) this.clock ??= ScanClock.join(this.periodMs, this);
  }

  stop(): void {
    this.stopped = true;
    this.deferred = false;
    clearTimeout(this.timer);
    this.clock?.leave(this);
    this.clock = undefined;
  }

  slot(missed: number): void {
    this.slave.stats.overruns += missed;
    this.tick();
  }

  private readonly tick = (): void => {
    if (this.stopped) return;
    if (!this.running) {
      void this.runScan();
    } else if (!this.deferred) {
      this.deferred = true;
    } else {
      this.slave.stats.overruns++;
    }
  };

  private async runScan(): Promise<void> {
    this.running = true;
    try {
      await this.slave.scan(performance.now());
    } finally {
      this.running = false;
    }
    if (this.deferred && !this.stopped) {
      this.deferred = false;
      void this.runScan();
      return;
    }
    // Unthrottled slaves (scan_frequency 0) scan again once the last scan is done, after a short pause.
    if (this.periodMs === 0 && this.repeat && !this.stopped) this.timer = setTimeout(this.tick, UNTHROTTLED_GAP_MS);
    // A slave that is read only once (scan_enabled: false) keeps being tried
    // until that one read succeeds; the slave paces the attempts (offline probes).
    if (!this.repeat && !this.stopped && !this.slave.answering) {
      this.timer = setTimeout(this.tick, ONCE_RETRY_MS);
    }
  }
}
