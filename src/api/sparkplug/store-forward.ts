import { join } from 'node:path';
import { CoalescingSaver } from '../../state/coalescing-saver.js';
import { readJsonState, writeJsonState } from '../../state/json-state.js';
import { fileSafe } from './bdseq-store.js';
import type { MetricValue } from './payload-types.js';

// Store-and-forward: while no host can hear us, each change is kept with its
// time; after the next birth they go out as historical DDATA, oldest first.
// Bounded by a memory cap (oldest dropped first, counted) and an age, taken
// on the monotonic clock (a step of the wall clock, such as NTP's first sync
// on a board without RTC, must not drop an hour of changes at once); with
// `file: true` the buffer is also saved in the state directory shortly after
// it changes, so a restart during an outage does not lose it.

export interface BufferedChange {
  /** Sparkplug device id. */
  device: string;
  /** Metric name (not alias: aliases may differ after a restart with another config). */
  name: string;
  datatype: number;
  value: MetricValue;
  timestamp: number;
}

/**
 * What one buffered change is counted as against `memory_mb`: an object of
 * five fields whose strings are shared with the point model measures about
 * 90 bytes of heap (bench/sparkplug.mjs); the rest is headroom, so the cap
 * errs on the safe side.
 */
export const BYTES_PER_CHANGE = 120;

/** Changes within this time cost one write of the buffer file. */
const FILE_SAVE_DELAY_MS = 2000;
/**
 * The file is rewritten whole, so a large buffer is written less often: at
 * least this long per change held between two writes (a full 8 MB buffer of
 * about 70,000 changes, some 2.8 MB of JSON, every 140 s: about 20 KB/s
 * while an outage lasts, which an SD card takes), never more often than
 * FILE_SAVE_DELAY_MS.
 */
const FILE_MS_PER_CHANGE = 2;

export interface StoreForwardOptions {
  memoryMb: number;
  maxAgeS: number;
  /** The file, when `file: true`. */
  stateDir?: string;
  edgeNodeKey: string;
  log: (level: 'warn' | 'error', message: string) => void;
  /** The wall clock: only to age changes read back from the file after a restart. */
  now?: () => number;
  /** The monotonic clock, for every age and interval in this run. */
  monotonicNow?: () => number;
}

export class StoreForward {
  private entries: BufferedChange[] = [];
  /** When each entry was buffered, on the monotonic clock (same indices as entries). */
  private heldAt: number[] = [];
  private head = 0;
  readonly capacity: number;
  /** Changes dropped because a cap was reached or they grew too old, since start. */
  dropped = 0;
  /** Changes buffered since start. */
  stored = 0;
  private warnedThisOutage = false;
  private readonly saver: CoalescingSaver<BufferedChange[]> | undefined;
  readonly path: string | undefined;
  private readonly now: () => number;
  private readonly monotonic: () => number;
  private fileTimer: NodeJS.Timeout | undefined;
  private lastFileWrite = 0;

  constructor(private readonly options: StoreForwardOptions) {
    this.capacity = Math.floor((options.memoryMb * 1024 * 1024) / BYTES_PER_CHANGE);
    this.now = options.now ?? Date.now;
    this.monotonic = options.monotonicNow ?? (() => performance.now());
    if (options.stateDir !== undefined) {
      const path = join(options.stateDir, `sparkplug-${fileSafe(options.edgeNodeKey)}.buffer.json`);
      this.path = path;
      this.saver = new CoalescingSaver(`Sparkplug store-and-forward buffer to ${path}`, (entries) => writeJsonState(path, { changes: entries.map(toRow) }), FILE_SAVE_DELAY_MS, (message) =>
        options.log('error', message),
      );
      this.load(path);
    }
  }

  get depth(): number {
    return this.entries.length - this.head;
  }

  /** A new outage began: its first drop is logged again. */
  beginOutage(): void {
    this.warnedThisOutage = false;
  }

  push(change: BufferedChange): void {
    if (this.capacity === 0) {
      this.drop(1, 'the store-and-forward memory cap is 0');
      return;
    }
    if (this.depth >= this.capacity) {
      this.head++;
      this.drop(1, `the store-and-forward buffer is full (${this.capacity} changes, ${this.options.memoryMb} MB)`);
    }
    this.entries.push(change);
    this.heldAt.push(this.monotonic());
    this.stored++;
    this.compact();
    this.scheduleFile();
  }

  /** Up to `count` oldest changes, taken out of the buffer; too old ones are dropped on the way. */
  take(count: number): BufferedChange[] {
    this.expire();
    const taken = this.entries.slice(this.head, this.head + count);
    this.head += taken.length;
    this.compact();
    if (taken.length > 0) this.scheduleFile();
    return taken;
  }

  /** Drops what was taken but could not be sent (counted). */
  lose(count: number, reason: string): void {
    if (count > 0) this.drop(count, reason);
  }

  /** Brings the file up to date now (a clean stop, or the buffer drained). */
  async flush(): Promise<void> {
    if (!this.saver) return;
    if (this.fileTimer !== undefined) {
      clearTimeout(this.fileTimer);
      this.fileTimer = undefined;
      this.saver.markDirty(() => this.snapshot());
    }
    await this.saver.flush();
  }

  private scheduleFile(): void {
    if (!this.saver || this.fileTimer !== undefined) return;
    const every = Math.max(FILE_SAVE_DELAY_MS, this.depth * FILE_MS_PER_CHANGE);
    const wait = Math.max(0, this.lastFileWrite + every - this.monotonic() - FILE_SAVE_DELAY_MS);
    this.fileTimer = setTimeout(() => {
      this.fileTimer = undefined;
      this.lastFileWrite = this.monotonic();
      this.saver?.markDirty(() => this.snapshot());
    }, wait);
    this.fileTimer.unref();
  }

  private expire(): void {
    const oldest = this.monotonic() - this.options.maxAgeS * 1000;
    let expired = 0;
    while (this.head < this.entries.length && this.heldAt[this.head]! < oldest) {
      this.head++;
      expired++;
    }
    if (expired > 0) this.drop(expired, `buffered changes older than max_age_s (${this.options.maxAgeS} s)`);
  }

  private drop(count: number, reason: string): void {
    this.dropped += count;
    if (this.warnedThisOutage) return;
    this.warnedThisOutage = true;
    this.options.log('warn', `Sparkplug: dropping the oldest buffered changes: ${reason} (logged once per outage; see iogate_sparkplug_buffer_dropped_total)`);
  }

  /** Drops the taken prefix once it outweighs the rest, so the array does not grow without bound. */
  private compact(): void {
    if (this.head > 1024 && this.head * 2 > this.entries.length) {
      this.entries = this.entries.slice(this.head);
      this.heldAt = this.heldAt.slice(this.head);
      this.head = 0;
    }
  }

  private snapshot(): BufferedChange[] {
    return this.entries.slice(this.head);
  }

  private load(path: string): void {
    const read = readJsonState(path);
    if (read.warning) this.options.log('warn', `Sparkplug: ${read.warning}`);
    const rows = (read.data as { changes?: unknown } | undefined)?.changes;
    if (!Array.isArray(rows)) return;
    for (const row of rows) {
      const change = fromRow(row);
      if (change === undefined) continue;
      if (this.depth >= this.capacity) this.head++;
      this.entries.push(change);
      // Across a restart only the wall clock links the two runs: the age it gives, never a negative one.
      this.heldAt.push(this.monotonic() - Math.max(0, this.now() - change.timestamp));
    }
    this.compact();
  }
}

type Row = [string, string, number, MetricValue, number];

function toRow(change: BufferedChange): Row {
  return [change.device, change.name, change.datatype, typeof change.value === 'bigint' ? Number(change.value) : change.value, change.timestamp];
}

function fromRow(row: unknown): BufferedChange | undefined {
  if (!Array.isArray(row) || row.length !== 5) return undefined;
  const [device, name, datatype, value, timestamp] = row as unknown[];
  if (typeof device !== 'string' || typeof name !== 'string' || typeof datatype !== 'number' || typeof timestamp !== 'number') return undefined;
  if (!(value === null || typeof value === 'number' || typeof value === 'boolean' || typeof value === 'string')) return undefined;
  return { device, name, datatype, value, timestamp };
}
