import type { MqttClient } from 'mqtt';
import type { Births } from './births.js';
import type { Metric } from './payload-types.js';
import type { Point, PointModel, SparkplugDevice } from './point-model.js';
import type { BufferedChange, StoreForward } from './store-forward.js';
import type { SparkplugTopics } from './topics.js';
import type { UnconfirmedTail } from './unconfirmed.js';

// The way back out of store-and-forward: after a birth, the changes kept while
// no host heard us go out as historical DDATA, oldest first, a batch per tick,
// so live DATA and polling are not held up behind a long outage. A change is
// only sent under an alias the last birth declared; what no longer has one is
// dropped (and counted) rather than sent under a wrong or unknown alias.

/** Historical replay: changes per tick and tick period (≈ 5,000 changes/s), so live DATA and polling go first. */
const REPLAY_BATCH = 250;
const REPLAY_TICK_MS = 50;

export class HistoricalReplay {
  private replayTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly buffer: StoreForward,
    private readonly tail: UnconfirmedTail,
    private readonly births: Births,
    private readonly model: PointModel,
    private readonly topics: SparkplugTopics,
    /** The devices the host was told are born (kept by births.ts). */
    private readonly deviceBorn: ReadonlySet<string>,
    private readonly counts: { dataMessages: number; replayed: number },
    /** The connection to replay on while the node is born, else undefined. */
    private readonly bornClient: () => MqttClient | undefined,
  ) {}

  schedule(): void {
    if (this.replayTimer !== undefined) return;
    this.replayTimer = setTimeout(() => {
      this.replayTimer = undefined;
      this.replayBatch();
    }, REPLAY_TICK_MS);
  }

  /** The session ended: the rest waits for the next birth. */
  cancel(): void {
    clearTimeout(this.replayTimer);
    this.replayTimer = undefined;
  }

  private replayBatch(): void {
    const client = this.bornClient();
    if (!client?.connected) return;
    const batch = this.buffer.take(REPLAY_BATCH);
    // Oldest first; consecutive changes of one device share a DDATA.
    let run: { device: SparkplugDevice; metrics: Metric[] } | undefined;
    let unsendable = 0;
    const flush = () => {
      if (!run) return;
      this.births.publish(client, this.topics.device('DDATA', run.device.id), run.metrics);
      this.counts.dataMessages++;
      this.counts.replayed += run.metrics.length;
      run = undefined;
    };
    for (const change of batch) {
      const point = this.historicalPoint(change);
      if (!point) {
        unsendable++;
        continue;
      }
      if (run && run.device !== point.group) flush();
      run ??= { device: point.group, metrics: [] };
      this.tail.sent(change);
      run.metrics.push({ alias: point.alias, datatype: point.datatype, value: change.value, timestamp: change.timestamp, isHistorical: true });
    }
    flush();
    this.buffer.lose(unsendable, 'buffered changes of metrics or devices that no longer exist or are offline');
    if (this.buffer.depth > 0) this.schedule();
    else void this.buffer.flush();
  }

  private historicalPoint(change: BufferedChange): Point | undefined {
    const point = this.model.find(change.device, change.name);
    return point && this.deviceBorn.has(point.group.id) ? point : undefined;
  }
}
