import type { Actor } from '../../registry/audit-trail.js';
import type { Device } from '../../devices/device.js';
import { RequestError } from '../../registry/request-error.js';
import type { ChangeFeed } from '../../registry/feed.js';
import type { Registry } from '../../registry/registry.js';
import { writeDevice } from '../../registry/write.js';
import { SerialQueue } from '../mqtt/serial-queue.js';
import { NEXT_SERVER, REBIRTH } from './node-metrics.js';
import { decodePayload, DEFAULT_DECODE_LIMITS } from './payload-decode.js';
import { DataType, DATA_TYPE_NAMES, type Metric } from './payload-types.js';
import type { Point, PointModel } from './point-model.js';
import type { QuietLog } from './quiet-log.js';

// NCMD and DCMD from a host. A DCMD's writes go through the one write path
// (range checks, EVOK coercion, offline fail-fast, deadlines) like every other
// API's; the change shows up as DDATA once the board confirmed it. A command
// is checked whole before anything is written: one unknown alias, read-only
// metric or wrong datatype refuses all of it. Refusals are logged (quietly)
// and counted; nothing answers on the wire, as the spec has no reply.

/** Commands one device may have queued; a host flooding one output gets refusals, not a growing queue. */
const MAX_QUEUED_PER_DEVICE = 32;

export interface CommandStats {
  accepted: number;
  refused: number;
  malformed: number;
  rebirthRequests: number;
}

export interface CommandContext {
  registry: Registry;
  feed: ChangeFeed;
  model: PointModel;
  write: boolean;
  /**
   * The primary host the node serves, named in the audit log as the writer
   * (`sparkplug:<host id>`): Sparkplug commands carry no sender, and with a
   * primary host configured the node takes commands only while it is online.
   */
  hostId?: string;
  quiet: QuietLog;
  /** Whether the node has birthed on the current connection. */
  born(): boolean;
  /** Whether the Sparkplug device is born (DBIRTH sent, no DDEATH since). */
  deviceBorn(id: string): boolean;
  rebirth(): void;
  nextServer(): void;
}

export class CommandHandler {
  readonly stats: CommandStats = { accepted: 0, refused: 0, malformed: 0, rebirthRequests: 0 };
  private readonly queue = new SerialQueue<Device>(MAX_QUEUED_PER_DEVICE);

  private readonly actor: Actor;

  constructor(private readonly context: CommandContext) {
    this.actor = { who: context.hostId !== undefined ? `sparkplug:${context.hostId}` : 'sparkplug', from: '', interface: 'sparkplug' };
  }

  nodeCommand(payload: Buffer): void {
    const metrics = this.decode('NCMD', payload);
    if (metrics === undefined) return;
    for (const metric of metrics) {
      if (metric.name === REBIRTH && metric.value === true) {
        this.stats.rebirthRequests++;
        this.context.rebirth();
      } else if (metric.name === NEXT_SERVER && metric.value === true) {
        this.context.nextServer();
      } else {
        this.refuse('ncmd-unknown', `NCMD metric '${shown(metric.name ?? `alias ${metric.alias}`)}' is not a node command (only ${REBIRTH} and ${NEXT_SERVER} = true)`);
      }
    }
  }

  deviceCommand(deviceId: string, payload: Buffer): void {
    const metrics = this.decode(`DCMD for device ${shown(deviceId)}`, payload);
    if (metrics === undefined) return;
    const where = `DCMD for device ${shown(deviceId)}`;
    if (!this.context.born()) return this.refuse('before-birth', `${where} refused: the node has not birthed on this connection yet`);
    if (!this.context.write) return this.refuse('write-off', `${where} refused: apis.sparkplug.write is false`);
    if (this.context.model.device(deviceId) === undefined) return this.refuse('unknown-device', `${where} refused: no such device`);
    if (!this.context.deviceBorn(deviceId)) return this.refuse('device-dead', `${where} refused: the device is offline (no DBIRTH)`);
    const writes: Array<{ point: Point; params: Record<string, unknown> }> = [];
    for (const metric of metrics) {
      const checked = this.check(deviceId, metric);
      if (typeof checked === 'string') return this.refuse(checked.split(':')[0]!, `${where} refused: ${checked}`);
      writes.push(checked);
    }
    if (writes.length === 0) return this.refuse('empty', `${where} refused: it names no metric`);
    for (const { point, params } of writes) {
      const queued = this.queue.run(point.device, () => this.write(where, point, params));
      if (!queued) this.refuse('busy', `${where} refused: ${MAX_QUEUED_PER_DEVICE} commands for ${point.name} are still waiting`);
    }
  }

  private decode(what: string, payload: Buffer): Metric[] | undefined {
    if (payload.length > DEFAULT_DECODE_LIMITS.maxBytes) {
      this.stats.malformed++;
      this.context.quiet.note('oversized', `Sparkplug: ${what} dropped: ${payload.length} bytes exceed ${DEFAULT_DECODE_LIMITS.maxBytes}`);
      return undefined;
    }
    const result = decodePayload(payload);
    if (!result.ok) {
      this.stats.malformed++;
      this.context.quiet.note('malformed', `Sparkplug: ${what} dropped: malformed payload: ${result.error}`);
      return undefined;
    }
    return result.payload.metrics;
  }

  /** The write a metric asks for, or why it is refused (`kind: reason`). */
  private check(deviceId: string, metric: Metric): { point: Point; params: Record<string, unknown> } | string {
    const point = metric.alias !== undefined ? this.context.model.byAliasNumber(metric.alias) : metric.name !== undefined ? this.context.model.find(deviceId, metric.name) : undefined;
    const label = metric.name !== undefined ? `'${shown(metric.name)}'` : metric.alias !== undefined ? `alias ${metric.alias}` : 'a metric without name or alias';
    if (point === undefined || point.group.id !== deviceId) return `unknown-metric: ${label} is not a metric of device ${shown(deviceId)}`;
    if (metric.name !== undefined && metric.alias !== undefined && metric.name !== point.name) return `unknown-metric: alias ${metric.alias} is ${point.name}, not '${shown(metric.name)}'`;
    if (!point.writable) return `read-only: ${point.name} is read-only`;
    if (metric.datatype !== undefined && metric.datatype !== point.datatype) {
      return `datatype: ${point.name} is ${DATA_TYPE_NAMES[point.datatype]}, the command says ${DATA_TYPE_NAMES[metric.datatype] ?? metric.datatype}`;
    }
    const value = metric.value;
    if (value === undefined || value === null) return `value: ${point.name}: the command carries no value`;
    if (point.datatype === DataType.Boolean) {
      if (typeof value !== 'boolean') return `datatype: ${point.name} takes a Boolean`;
      return { point, params: { [point.field]: value ? 1 : 0 } };
    }
    if (typeof value === 'bigint') return `value: ${point.name}: ${value} is out of range`;
    if (typeof value !== 'number' || !Number.isFinite(value)) return `datatype: ${point.name} takes a number`;
    return { point, params: { [point.field]: value } };
  }

  private async write(where: string, point: Point, params: Record<string, unknown>): Promise<void> {
    try {
      await writeDevice(this.context.registry, this.context.feed, point.device, params, undefined, this.actor);
      this.stats.accepted++;
    } catch (error) {
      const reason = error instanceof RequestError ? error.message : error instanceof Error ? error.message : String(error);
      this.refuse('write-failed', `${where}: writing ${point.name} failed: ${reason}`);
    }
  }

  private refuse(kind: string, message: string): void {
    this.stats.refused++;
    this.context.quiet.note(kind, `Sparkplug: ${message}`);
  }
}

/** Client-chosen text in a log line: short and printable. */
function shown(text: string): string {
  const clean = text.replace(/[^\x20-\x7e]/g, '?');
  return clean.length > 60 ? `${clean.slice(0, 60)}…` : clean;
}
