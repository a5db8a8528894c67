// Counts attempts at something that keeps failing (reopening a bus, probing
// an offline slave) so the log gets one line when the trouble starts, one
// when it ends, and in between one summary per period instead of a line per
// attempt: on a PLC the log lives on an SD card.

export const SUMMARY_PERIOD_MS = 10 * 60_000;

export class RepeatSummary {
  private attempts = 0;
  private since = 0;
  private total = 0;
  private beganAt = 0;

  constructor(
    private readonly periodMs = SUMMARY_PERIOD_MS,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** The trouble started: counting begins. */
  begin(): void {
    this.attempts = 0;
    this.total = 0;
    this.since = this.now();
    this.beganAt = this.since;
  }

  /**
   * One more failed attempt. Returns the attempts of the period when a
   * summary is due (at most once per period), otherwise undefined.
   */
  attempt(): { attempts: number; minutes: number } | undefined {
    this.attempts++;
    this.total++;
    const elapsed = this.now() - this.since;
    if (elapsed < this.periodMs) return undefined;
    const summary = { attempts: this.attempts, minutes: Math.round(elapsed / 60_000) };
    this.attempts = 0;
    this.since = this.now();
    return summary;
  }

  /** Attempts since begin(), for the line that says the trouble ended. */
  get attemptsSinceBegin(): number {
    return this.total;
  }

  /** Seconds since begin(), rounded. */
  get secondsSinceBegin(): number {
    return Math.round((this.now() - this.beganAt) / 1000);
  }
}
