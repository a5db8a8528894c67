import type { SlaveUnit } from './slave-unit.js';

// Drives one slave's scans on a fixed-rate grid: scan n starts at
// t0 + n·period, so timer lateness never accumulates into drift. Overrun
// policy: when a scan is still running at its next slot, or the process was
// stalled past several slots, the missed slots are skipped (and counted) rather
// than run back to back, so a slow bus never builds a backlog of scans.

export class ScanLoop {
  private timer: NodeJS.Timeout | undefined;
  private immediate: NodeJS.Immediate | undefined;
  private running = false;
  private stopped = true;
  private origin = 0;
  private slot = 0;

  constructor(
    private readonly slave: SlaveUnit,
    private readonly periodMs: number,
    private readonly repeat: boolean,
  ) {}

  start(): void {
    this.stopped = false;
    this.origin = performance.now();
    this.slot = 0;
    this.tick();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    clearImmediate(this.immediate);
  }

  private tick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.slave.stats.overruns++;
    } else {
      void this.runScan();
    }
    if (this.repeat) this.scheduleNext();
  }

  private async runScan(): Promise<void> {
    this.running = true;
    try {
      await this.slave.scan(Date.now());
    } finally {
      this.running = false;
    }
    // Unthrottled slaves (scan_frequency 0) scan again as soon as the last scan is done.
    if (this.periodMs === 0 && this.repeat && !this.stopped) this.immediate = setImmediate(() => this.tick());
  }

  private scheduleNext(): void {
    if (this.periodMs === 0) return;
    const now = performance.now();
    this.slot++;
    let due = this.origin + this.slot * this.periodMs;
    if (due <= now) {
      const late = Math.floor((now - due) / this.periodMs) + 1;
      this.slave.stats.overruns += late;
      this.slot += late;
      due = this.origin + this.slot * this.periodMs;
    }
    this.timer = setTimeout(() => this.tick(), due - now);
  }
}
