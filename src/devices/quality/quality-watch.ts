import type { Device } from '../device.js';
import type { Quality } from './point-meta.js';

// Quality moves with time (a value turns stale by not being read), so no
// read reports it. The watch looks at each source (a Modbus slave, a 1-Wire
// sensor) a few times a second and reports the devices of one whose quality
// changed, for the clients of the meta view. Cost: one comparison per source.

export interface QualitySource {
  quality(now: number): Quality;
  /** The devices whose quality follows this source's. */
  readonly devices: readonly Device[];
}

const WATCH_MS = 250;

export class QualityWatch {
  private readonly last = new Map<QualitySource, Quality>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly sources: () => Iterable<QualitySource>,
    private readonly report: (devices: readonly Device[]) => void,
  ) {}

  start(): void {
    this.timer ??= setInterval(() => this.check(performance.now()), WATCH_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  check(now: number): void {
    for (const source of this.sources()) {
      const quality = source.quality(now);
      const before = this.last.get(source);
      this.last.set(source, quality);
      if (before !== undefined && before !== quality) this.report(source.devices);
    }
  }
}
