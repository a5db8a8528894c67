// A log line per kind of trouble at most once a minute, with the count of
// the ones held back, so a client publishing garbage in a loop cannot fill
// the SD card with our complaints about it.

const PERIOD_MS = 60_000;

export class QuietLog {
  private readonly last = new Map<string, { at: number; held: number }>();

  constructor(
    private readonly write: (message: string) => void,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Logs `message` unless a line of this `kind` was logged less than a minute ago. */
  note(kind: string, message: string): void {
    const now = this.now();
    const seen = this.last.get(kind);
    if (seen && now - seen.at < PERIOD_MS) {
      seen.held++;
      return;
    }
    const held = seen?.held ?? 0;
    this.last.set(kind, { at: now, held: 0 });
    // Bounded: the kinds are a fixed set of reasons, not client-chosen text.
    this.write(held > 0 ? `${message} (${held} more like it in the last minute were not logged)` : message);
  }
}
