import type { BoardModel, RegisterSpace } from '../../boards/model.js';
import type { ModbusBus, Priority } from '../../modbus/bus.js';
import { ModbusError } from '../../modbus/errors.js';
import type { ModbusRequest, ModbusResponse } from '../../modbus/pdu.js';
import type { Device } from '../device.js';
import { RegisterCache } from './register-cache.js';

// One Modbus slave at run time: its register cache, the devices decoded from
// it, its scan cycle and whether it answers. Devices do their I/O through it,
// so every confirmed write also lands in the cache and the reply to the write
// already shows the new state (EVOK#122 showed the old one).

export type SlaveState = 'starting' | 'online' | 'offline';

/** Devices whose visible state changed; `stateChanged` when the slave went on- or offline. */
export type ChangeListener = (slave: SlaveUnit, changed: ReadonlySet<Device>, stateChanged: boolean) => void;

export interface SlaveStats {
  /** Transactions with this slave (polls and writes), and how many timed out or failed otherwise. */
  requests: number;
  timeouts: number;
  errors: number;
  scans: number;
  failedScans: number;
  overruns: number;
  lastScanMs: number;
  lastOkAt: number;
}

/** After this many failed scans in a row the slave is offline and only probed. */
const FAILURES_TO_OFFLINE = 2;
const FIRST_PROBE_MS = 500;
const MAX_PROBE_MS = 30_000;

export class SlaveUnit {
  readonly cache: RegisterCache;
  readonly devices: Device[] = [];
  state: SlaveState = 'starting';
  readonly stats: SlaveStats = { requests: 0, timeouts: 0, errors: 0, scans: 0, failedScans: 0, overruns: 0, lastScanMs: 0, lastOkAt: 0 };
  lastError = '';
  private scanNumber = 0;
  private failuresInRow = 0;
  private probeDelay = FIRST_PROBE_MS;
  private nextProbeAt = 0;
  /** Settles when the first scan attempt is over, answered or not. */
  readonly firstScan: Promise<void>;
  private firstScanDone!: () => void;
  /** Devices to re-decode after each block read, by block index. */
  private readonly dependents: Device[][];
  /** Blocks confirmed writes patched since the last refreshAfterWrite. */
  private readonly patchedBlocks = new Set<number>();
  private readonly markPatched = (blockIndex: number) => this.patchedBlocks.add(blockIndex);

  constructor(
    readonly name: string,
    readonly unit: number,
    readonly model: BoardModel,
    readonly bus: ModbusBus,
    readonly scanPeriodMs: number,
    private readonly onChange: ChangeListener,
  ) {
    this.cache = new RegisterCache(model.blocks);
    this.dependents = model.blocks.map(() => []);
    this.firstScan = new Promise((resolve) => (this.firstScanDone = resolve));
  }

  /** Register a device and the blocks whose reads can change it. */
  attach(device: Device, registers: ReadonlyArray<{ space: RegisterSpace; address: number }>): void {
    this.devices.push(device);
    const blocks = new Set(registers.map(({ space, address }) => this.cache.blockIndexOf(space, address)));
    for (const index of blocks) if (index >= 0) this.dependents[index]!.push(device);
  }

  /**
   * Read the blocks due in this scan, re-decode the devices they feed and
   * report those whose state changed. An offline slave is only probed, with
   * back-off, so a dead slave costs the bus one timeout now and then.
   */
  async scan(now: number): Promise<void> {
    if (this.state === 'offline' && now < this.nextProbeAt) return;
    const changed = new Set<Device>();
    const started = performance.now();
    const wasState = this.state;
    const firstPass = this.state !== 'online';
    // While offline the scan is a probe: one attempt per block, no retries.
    const retries = this.state === 'offline' ? 0 : undefined;
    const scanNumber = this.scanNumber++;
    try {
      for (let index = 0; index < this.model.blocks.length; index++) {
        const block = this.model.blocks[index]!;
        if (!firstPass && scanNumber % block.frequency !== 0) continue;
        await this.readBlock(index, retries, changed);
      }
      this.stats.scans++;
      this.stats.lastOkAt = Date.now();
      this.failuresInRow = 0;
      this.probeDelay = FIRST_PROBE_MS;
      this.state = 'online';
    } catch (error) {
      this.stats.failedScans++;
      this.lastError = (error as Error).message;
      this.failuresInRow++;
      if (this.failuresInRow >= FAILURES_TO_OFFLINE || this.state === 'offline') {
        this.state = 'offline';
        this.nextProbeAt = now + this.probeDelay;
        this.probeDelay = Math.min(this.probeDelay * 2, MAX_PROBE_MS);
      }
    }
    this.stats.lastScanMs = performance.now() - started;
    this.firstScanDone();
    if (changed.size > 0 || wasState !== this.state) this.onChange(this, changed, wasState !== this.state);
  }

  /**
   * Read some blocks between scans (`input_scan_frequency`), re-decode the
   * devices they feed and report changes. One attempt each: the next read is
   * a few ms away, and failures are the scans' business (they count them and
   * take the slave offline).
   */
  async readBlocks(indices: readonly number[]): Promise<void> {
    const changed = new Set<Device>();
    try {
      for (const index of indices) await this.readBlock(index, 0, changed);
    } catch {
      // Counted in stats by request(); the next scan or read tries again.
    }
    if (changed.size > 0) this.onChange(this, changed, false);
  }

  private async readBlock(index: number, retries: number | undefined, changed: Set<Device>): Promise<void> {
    const block = this.model.blocks[index]!;
    const response = await this.request(
      { fc: block.type === 'input' ? 4 : 3, address: block.start_reg, quantity: block.count },
      'poll',
      retries,
    );
    if (!('registers' in response)) return;
    // Devices are re-decoded only when their registers moved: at 50 Hz on
    // every slave, decoding unchanged values was most of the idle CPU.
    if (!this.cache.store(index, response.registers)) return;
    for (const device of this.dependents[index]!) if (device.refresh()) changed.add(device);
  }

  offlineReason(): string | undefined {
    if (this.state !== 'offline') return undefined;
    return `Modbus slave '${this.name}' (unit ${this.unit} on bus ${this.bus.name}) is offline: ${this.lastError}`;
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
    for (const index of this.patchedBlocks) {
      for (const dependent of this.dependents[index]!) if (dependent !== device && dependent.refresh()) changed.add(dependent);
    }
    // Writes of other devices that patched meanwhile are covered too: their
    // patches happened before these refreshes.
    this.patchedBlocks.clear();
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

  /** Every transaction with this slave goes through here, so its counters see them all. */
  private async request(request: ModbusRequest, priority: Priority, retries?: number): Promise<ModbusResponse> {
    this.stats.requests++;
    try {
      return await this.bus.request(this.unit, request, priority, retries);
    } catch (error) {
      if (error instanceof ModbusError && error.kind === 'timeout') this.stats.timeouts++;
      else this.stats.errors++;
      throw error;
    }
  }
}
