import type { BoardModel, Feature, RegisterSpace } from '../../boards/model.js';
import type { ModbusBus, Priority } from '../../modbus/bus.js';
import { ModbusError, notSlavesFault } from '../../modbus/errors.js';
import { currentRequestContext } from '../../modbus/request-context.js';
import type { ModbusRequest, ModbusResponse } from '../../modbus/pdu.js';
import type { Device } from '../device.js';
import { DEFAULT_STALE_RULE, qualityOf, staleBoundMs, type PointMeta, type Quality, type StaleRule } from '../quality/point-meta.js';
import { ReadPlan, type PlannedRead } from './read-plan.js';
import { RegisterCache } from './register-cache.js';
import { SlaveHealth, type SlaveLog, type SlaveState } from './slave-health.js';

export type { SlaveLog, SlaveState } from './slave-health.js';

// One Modbus slave at run time: its register cache, the devices decoded from
// it, its scan cycle and whether it answers. Devices do their I/O through it,
// so every confirmed write also lands in the cache and the reply to the write
// already shows the new state (EVOK#122 showed the old one). Whether it
// answers, and when an offline one is probed, is slave-health.ts's business.

/** Devices whose visible state changed; `stateChanged` when the slave changed state (online, degraded, offline). */
export type ChangeListener = (slave: SlaveUnit, changed: ReadonlySet<Device>, stateChanged: boolean) => void;

const NOTHING_CHANGED: ReadonlySet<Device> = new Set();
const NO_OPTIONS = Object.freeze({});

export interface SlaveStats {
  /** Transactions with this slave (polls and writes), and how many timed out or failed otherwise. */
  requests: number;
  timeouts: number;
  errors: number;
  scans: number;
  failedScans: number;
  overruns: number;
  lastScanMs: number;
  /** performance.now() of the last block read that succeeded; 0 before the first. */
  lastOkAt: number;
  /** Smoothed time between the starts of two consecutive scans (0 until measured). */
  cycleMs: number;
}

export class SlaveUnit {
  readonly cache: RegisterCache;
  readonly devices: Device[] = [];
  /** The devices of each feature of the model, by channel: who a raw write of the feature's registers or coils moves. */
  readonly channels = new Map<Feature, Device[]>();
  readonly stats: SlaveStats = {
    requests: 0,
    timeouts: 0,
    errors: 0,
    scans: 0,
    failedScans: 0,
    overruns: 0,
    lastScanMs: 0,
    lastOkAt: 0,
    cycleMs: 0,
  };
  /** When a value of this slave counts as stale (`quality` in the meta view). */
  staleRule: StaleRule = DEFAULT_STALE_RULE;
  private readonly health: SlaveHealth;
  private scanNumber = 0;
  /** performance.now() at the start of the last full-rate scan, for the cycle time; 0 after a probe. */
  private lastScanStartedAt = 0;
  /** Settles when the first scan attempt is over, answered or not. */
  readonly firstScan: Promise<void>;
  private firstScanDone!: () => void;
  /** What the scans read, merged where the map allows. */
  private readonly plan: ReadPlan;
  /** One request per block, for the input reads between scans. */
  private readonly blockReads: ModbusRequest[];
  /** Devices to re-decode after each block read, by block index. */
  private readonly dependents: Device[][];
  /**
   * Called after every fresh read of a block, changed or not (counter totals
   * must see each reading, and its re-reading). They change nothing EVOK
   * shows, so they report no change of their own.
   */
  private readonly readHooks: Array<Array<() => void>>;
  /** Blocks with a re-read scheduled. */
  private readonly rereads = new Set<number>();
  /** The blocks each device is decoded from, for its quality and age. */
  private readonly blocksOf = new Map<Device, number[]>();
  /**
   * Blocks confirmed writes patched since the last refreshAfterWrite, one
   * flag per block index. Not a Set: adding to a long-lived Set after clear()
   * makes V8 allocate a new hash table for it, and a table whose Set lives in
   * the old generation is allocated there, so every write left two of them
   * as old-generation garbage until the next mark-compact (bench: heap
   * sampling under POST load).
   */
  private readonly patchedBlocks: boolean[];
  private readonly markPatched = (blockIndex: number) => {
    this.patchedBlocks[blockIndex] = true;
  };

  constructor(
    readonly name: string,
    readonly unit: number,
    readonly model: BoardModel,
    readonly bus: ModbusBus,
    readonly scanPeriodMs: number,
    private readonly onChange: ChangeListener,
    private readonly log: SlaveLog = () => {},
  ) {
    this.cache = new RegisterCache(model.blocks);
    this.plan = new ReadPlan(model.blocks);
    this.blockReads = model.blocks.map((block) => ({ fc: block.type === 'input' ? 4 : 3, address: block.start_reg, quantity: block.count }));
    this.dependents = model.blocks.map(() => []);
    this.patchedBlocks = model.blocks.map(() => false);
    this.readHooks = model.blocks.map(() => []);
    this.firstScan = new Promise((resolve) => (this.firstScanDone = resolve));
    this.health = new SlaveHealth(bus, unit, this.label(), log, () => this.onChange(this, NOTHING_CHANGED, true));
  }

  get state(): SlaveState {
    return this.health.state;
  }

  get lastError(): string {
    return this.health.lastError;
  }

  /** Times the slave came back after being offline (slave-health.ts). */
  get returns(): number {
    return this.health.returns;
  }

  /** Share of the last attempts (up to 50) the slave answered, 1 before any. */
  get successRatio(): number {
    return this.health.successRatio;
  }

  /** Whether the slave answers (fully or in part). */
  get answering(): boolean {
    return this.health.answering;
  }

  /** Register a device and the blocks whose reads can change it. */
  attach(device: Device, registers: ReadonlyArray<{ space: RegisterSpace; address: number }>): void {
    this.devices.push(device);
    const blocks = new Set(registers.map(({ space, address }) => this.cache.blockIndexOf(space, address)));
    for (const index of blocks) if (index >= 0) this.dependents[index]!.push(device);
    this.blocksOf.set(device, [...blocks].filter((index) => index >= 0));
  }

  /** Have `hook` called after every read of the block, changed or not. */
  onRead(blockIndex: number, hook: () => void): void {
    this.readHooks[blockIndex]!.push(hook);
  }

  /** Read a block again soon, ahead of the scan (a reading that needs a second look); one at a time per block. */
  reread(blockIndex: number): void {
    if (this.rereads.has(blockIndex)) return;
    this.rereads.add(blockIndex);
    setImmediate(() => {
      void this.readBlocks([blockIndex]).finally(() => this.rereads.delete(blockIndex));
    });
  }

  /** The block index of a register, or -1. */
  blockIndexOf(space: RegisterSpace, address: number, count = 1): number {
    return this.cache.blockIndexOf(space, address, count);
  }

  /**
   * Quality and age of a device of this slave: offline with the slave, unknown
   * until each of its blocks was read, stale once one of them is older than
   * the stale rule allows for how often that block is read (the configured
   * period or the measured cycle, whichever is slower). A confirmed write
   * counts as a confirmation of what it wrote.
   */
  pointMeta(device: Device, writeConfirmedAt: number, now: number): PointMeta {
    const reachable = this.state !== 'offline';
    const blocks = this.blocksOf.get(device) ?? [];
    if (blocks.length === 0) return { quality: reachable ? 'good' : 'offline', confirmedAt: writeConfirmedAt };
    let quality: Quality = 'good';
    let oldest = Infinity;
    for (const index of blocks) {
      const block = this.cache.blocks[index]!;
      const readAt = block.valid ? block.readAt : 0;
      oldest = Math.min(oldest, readAt);
      const blockQuality = qualityOf(readAt, reachable, this.staleBoundMs(block.def.frequency), now);
      if (QUALITY_RANK[blockQuality] > QUALITY_RANK[quality]) quality = blockQuality;
    }
    const confirmedAt = oldest === 0 ? 0 : Math.max(oldest, writeConfirmedAt);
    return { quality, confirmedAt };
  }

  /** The quality of the slave as a whole: that of its most often read blocks (what `stale_s` measures). */
  quality(now: number): Quality {
    if (this.state === 'offline') return 'offline';
    let frequency = Infinity;
    for (const block of this.cache.blocks) frequency = Math.min(frequency, block.def.frequency);
    const age = this.cache.stalestAgeMs(now);
    if (age === null) return 'unknown';
    return age > this.staleBoundMs(frequency === Infinity ? 1 : frequency) ? 'stale' : 'good';
  }

  private staleBoundMs(frequency: number): number {
    return staleBoundMs(Math.max(this.scanPeriodMs, this.stats.cycleMs) * frequency, this.staleRule);
  }

  /**
   * Read the blocks due in this scan, re-decode the devices they feed and
   * report those whose state changed. An offline slave is only probed, with
   * back-off, so a dead slave costs the bus one timeout now and then.
   */
  /** `now`: performance.now(), so a step of the wall clock neither delays nor hastens a probe. */
  async scan(now: number): Promise<void> {
    if (!this.health.scanDue(now)) return;
    // Made only when a device changed, which most polls do not.
    let changed: Set<Device> | undefined;
    const started = performance.now();
    const wasState = this.state;
    const probing = this.state === 'offline';
    const firstPass = !this.answering;
    if (!firstPass && this.lastScanStartedAt > 0) {
      const interval = started - this.lastScanStartedAt;
      this.stats.cycleMs = this.stats.cycleMs === 0 ? interval : this.stats.cycleMs * 0.8 + interval * 0.2;
    }
    this.lastScanStartedAt = firstPass ? 0 : started;
    // While offline the scan is a probe: one attempt per block, no retries.
    const retries = probing ? 0 : undefined;
    const scanNumber = this.scanNumber++;
    const faultsBefore = this.health.faults;
    let answered = false;
    let failure: Error | undefined;
    let interrupted: ModbusError | undefined;
    const reads = this.plan.due(scanNumber, firstPass);
    for (let r = 0; r < reads.length; r++) {
      const read = reads[r]!;
      let response: ModbusResponse;
      const since = this.cache.mark();
      try {
        response = await this.request(read.request, 'poll', retries);
      } catch (error) {
        // The line went down or the poll waited past its deadline: no news about the slave.
        if (notSlavesFault(error)) {
          interrupted = error as ModbusError;
          break;
        }
        if (error instanceof ModbusError && error.kind === 'exception') {
          answered = true;
          if (read.blocks.length > 1) {
            // The slave refused a merged read: its blocks go one by one from the next scan on.
            this.plan.split(read);
            this.log('info', `${this.label()} refused a read of registers ${read.request.address}-${read.request.address + read.request.quantity - 1} (${error.message}); reading its ${read.blocks.length} blocks one by one`);
          }
        }
        failure = error as Error;
        // Once the slave answered in this scan, its other blocks are still worth
        // reading; a slave silent so far is likely gone, and its other blocks
        // would only cost the line more timeouts.
        if (!answered) break;
        continue;
      }
      // A late reply can pass for the answer to this read: nothing more is read or trusted once the slave was caught at it.
      if (this.health.faults !== faultsBefore) break;
      answered = true;
      const readAt = performance.now();
      this.stats.lastOkAt = readAt;
      changed = this.storeRead(read, response, readAt, since, changed);
    }
    if (this.health.faults !== faultsBefore) {
      answered = false;
      failure = new ModbusError('protocol', `slave ${this.unit} ${this.health.lastFault}`);
    }
    this.stats.lastScanMs = performance.now() - started;
    if (!interrupted) this.afterScan(answered, failure, now);
    else if (interrupted.kind === 'disconnected') this.health.lineDown(interrupted);
    this.firstScanDone();
    if (changed || wasState !== this.state) this.onChange(this, changed ?? NOTHING_CHANGED, wasState !== this.state);
  }

  private afterScan(answered: boolean, failure: Error | undefined, now: number): void {
    if (failure) this.stats.failedScans++;
    else this.stats.scans++;
    this.health.afterScan(answered, failure, now);
  }

  private label(): string {
    return `Modbus slave '${this.name}' (unit ${this.unit} on bus ${this.bus.name})`;
  }

  /**
   * Read some blocks between scans (`input_scan_frequency`), re-decode the
   * devices they feed and report changes. One attempt each: the next read is
   * a few ms away, and failures are the scans' business (they count them and
   * decide the slave's state). They go ahead of other polls on the bus.
   */
  async readBlocks(indices: readonly number[]): Promise<void> {
    let changed: Set<Device> | undefined;
    try {
      for (const index of indices) {
        const since = this.cache.mark();
        const response = await this.request(this.blockReads[index]!, 'input', 0);
        if ('registers' in response) changed = this.storeBlock(index, response.registers, 0, performance.now(), since, changed);
      }
    } catch {
      // Counted in stats by request(); the next scan or read tries again.
    }
    if (changed) this.onChange(this, changed, false);
  }

  /** Keep a read's registers, block by block; devices are re-decoded only when their block moved. */
  /** `since`: the cache's mark() when the read was asked for (writes confirmed after it win). */
  private storeRead(read: PlannedRead, response: ModbusResponse, readAt: number, since: number, changed: Set<Device> | undefined): Set<Device> | undefined {
    if (!('registers' in response)) return changed;
    for (let i = 0; i < read.blocks.length; i++) changed = this.storeBlock(read.blocks[i]!, response.registers, read.offsets[i]!, readAt, since, changed);
    return changed;
  }

  /** Returns `changed`, made if it was not and a device changed. */
  private storeBlock(index: number, registers: readonly number[], offset: number, readAt: number, since: number, changed: Set<Device> | undefined): Set<Device> | undefined {
    const moved = this.cache.store(index, registers, offset, readAt, since);
    for (const hook of this.readHooks[index]!) hook();
    // At 50 Hz on every slave, decoding unchanged values was most of the idle CPU.
    if (!moved) return changed;
    for (const device of this.dependents[index]!) if (device.refresh()) (changed ??= new Set()).add(device);
    return changed;
  }

  offlineReason(): string | undefined {
    if (this.state !== 'offline') return undefined;
    return `${this.label()} is offline: ${this.lastError}`;
  }

  /**
   * After a write through `device`, confirmed or failed: re-decode it and the
   * devices fed by the blocks writes patched, and report changes. Re-decoding
   * the whole slave instead cost a 40-register brain board some fifty
   * decode-and-serialise passes per write, most of the write path's time.
   */
  refreshAfterWrite(device: Device): void {
    const changed = new Set<Device>();
    if (device.refresh()) changed.add(device);
    for (let index = 0; index < this.patchedBlocks.length; index++) {
      if (!this.patchedBlocks[index]) continue;
      // Writes of other devices that patched meanwhile are covered too: their
      // patches happened before these refreshes.
      this.patchedBlocks[index] = false;
      for (const dependent of this.dependents[index]!) if (dependent !== device && dependent.refresh()) changed.add(dependent);
    }
    if (changed.size > 0) this.onChange(this, changed, false);
  }

  /** Re-decode every device of this slave and report changes. */
  refreshAll(): void {
    const changed = new Set<Device>();
    for (const device of this.devices) if (device.refresh()) changed.add(device);
    if (changed.size > 0) this.onChange(this, changed, false);
  }

  async writeCoil(address: number, on: boolean, mirror?: { register: number; bit: number }): Promise<void> {
    await this.request({ fc: 5, address, value: on }, 'write');
    if (!mirror) return;
    const current = this.cache.get('holding', mirror.register);
    if (current === null) return;
    const mask = 1 << mirror.bit;
    this.cache.patch('holding', mirror.register, [on ? current | mask : current & ~mask], this.markPatched);
  }

  async writeRegister(address: number, value: number): Promise<void> {
    await this.request({ fc: 6, address, value }, 'write');
    this.cache.patch('holding', address, [value], this.markPatched);
  }

  async writeRegisters(address: number, values: number[]): Promise<void> {
    await this.request({ fc: 16, address, values }, 'write');
    this.cache.patch('holding', address, values, this.markPatched);
  }

  /** A fresh read ahead of the polls, for read-modify-write of shared bit registers. */
  async readRegisters(space: RegisterSpace, address: number, quantity: number): Promise<number[]> {
    const response = await this.request({ fc: space === 'input' ? 4 : 3, address, quantity }, 'write');
    if (!('registers' in response)) throw new ModbusError('protocol', `slave ${this.unit}: unexpected reply`);
    this.cache.patch(space, address, response.registers, this.markPatched);
    return response.registers;
  }

  /**
   * Every transaction with this slave goes through here, so its counters see
   * them all. A write to an offline slave fails at once: only its probes may
   * spend line time on it. A write takes its client's signal and deadline
   * from the API call it runs in.
   */
  private request(request: ModbusRequest, priority: Priority, retries?: number): Promise<ModbusResponse> {
    if (priority === 'write' && this.state === 'offline') return Promise.reject(new ModbusError('offline', this.offlineReason()!));
    const context = priority === 'write' ? currentRequestContext() : undefined;
    // Polls pass no options object, and the outcome is counted by two handlers made once rather than an
    // async function per read: one object and one promise fewer per poll.
    const options = context ? { retries, signal: context.signal, deadline: context.deadline, onAnswered: context.onAnswered } : retries === undefined ? NO_OPTIONS : retries;
    return this.bus.request(this.unit, request, priority, options).then(this.countAnswer, this.countFailure);
  }

  private readonly countAnswer = (response: ModbusResponse): ModbusResponse => {
    this.stats.requests++;
    return response;
  };

  private readonly countFailure = (error: unknown): never => {
    // Requests that never reached the wire are no transaction with the slave.
    if (notSlavesFault(error)) throw error;
    this.stats.requests++;
    if (error instanceof ModbusError && error.kind === 'timeout') this.stats.timeouts++;
    else this.stats.errors++;
    throw error;
  };
}

/** Worse qualities rank higher: a device is as good as its worst block. */
const QUALITY_RANK: Readonly<Record<Quality, number>> = { good: 0, stale: 1, unknown: 2, offline: 3 };
