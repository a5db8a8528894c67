import type { BoardModel } from '../boards/model.js';
import { coilTargets, type CoilAction, type CoilTarget } from '../boards/regmap.js';
import type { SlaveStore } from '../modbus/slave.js';
import { DirectSwitchFirmware } from './direct-switch.js';
import { applyFirmwareDefaults } from './firmware-defaults.js';

// A board that answers Modbus like the real one would, built only from its
// register map: every register of the model's blocks exists, coil writes of
// binary outputs flip their bits in the value registers, and inputs can be
// driven from outside (a toggling pattern, or a test).

type Space = 'holding' | 'input';

export interface InputChange {
  /** ms since the epoch. */
  at: number;
  /** Value register and bit of the input. */
  address: number;
  bit: number;
  on: boolean;
}

const INPUT_LOG_LIMIT = 100_000;

export class SimulatedBoard implements SlaveStore {
  // Sized to the highest register the model's blocks cover, not to the whole
  // 16-bit address space: six full-size arrays were 384 KB per board, most of
  // a simulating daemon's memory beyond Node's own. Addresses past the end
  // read as 0 and are never present.
  private readonly registers: Record<Space, Uint16Array>;
  private readonly present: Record<Space, Uint8Array>;
  private readonly coils: Map<number, CoilTarget>;
  /** Inputs in DirectSwitch mode switch their outputs, whichever way the input or the masks changed. */
  private readonly directSwitch: DirectSwitchFirmware;
  /** Pulses written to action coils, oldest first, so tests can see a reset or NV save happen. */
  readonly actions: CoilAction[] = [];
  /**
   * Requests served, reads and writes apart: reads are the master's polls, so
   * the achieved poll rate is counted here, at the far end of the line.
   */
  reads = 0;
  writes = 0;
  /**
   * The last change made from outside (the control endpoint) and when the
   * master first read it back, on the monotonic clock every process of the
   * machine shares (process.hrtime.bigint()), so a benchmark can time a
   * change from the register write rather than from its own request.
   */
  private change: { space: Space; from: number; to: number; at: bigint; readAt: bigint | undefined } | undefined;

  /** When the master last wrote (registers or coils), on the same clock: a benchmark times an output from it. */
  masterWriteAt: bigint | undefined;

  /** Switched off (powerOff): the board answers nothing. */
  powered = true;
  /** True while the board answers nothing, as a slave whose line or power is gone (= not powered). */
  get silent(): boolean {
    return !this.powered;
  }
  set silent(silent: boolean) {
    this.powered = !silent;
  }
  /**
   * Digital input edges the simulator made (pattern or control endpoint),
   * oldest first, with wall-clock time: the ground truth a test compares
   * what reached a client with. Bounded; the oldest are dropped.
   */
  readonly inputLog: InputChange[] = [];

  /** Every request served. */
  get requests(): number {
    return this.reads + this.writes;
  }

  constructor(readonly model: BoardModel) {
    const size = (space: Space) =>
      Math.max(0, ...model.blocks.filter((block) => block.type === space).map((block) => block.start_reg + block.count));
    this.registers = { holding: new Uint16Array(size('holding')), input: new Uint16Array(size('input')) };
    this.present = { holding: new Uint8Array(size('holding')), input: new Uint8Array(size('input')) };
    for (const block of model.blocks) {
      this.present[block.type].fill(1, block.start_reg, block.start_reg + block.count);
    }
    this.coils = coilTargets(model);
    this.directSwitch = new DirectSwitchFirmware(model);
    applyFirmwareDefaults(this, model);
  }

  get(space: Space, address: number): number {
    return this.registers[space][address] ?? 0;
  }

  /** Set a register as the board's firmware would (inputs, counters, analog values). */
  set(space: Space, address: number, value: number): void {
    const before = this.registers[space][address] ?? 0;
    this.registers[space][address] = value;
    if (space === 'holding') this.directSwitch.changed(this, address, before, this.get(space, address));
  }

  /** Switch the board off: it falls silent, as a board without power or with a cut cable. */
  powerOff(): void {
    this.powered = false;
  }

  /**
   * Switch it on again. After a power cycle (`reset`) it starts as a fresh
   * board does: every register back to its power-on value, counters at 0.
   */
  powerOn(reset: boolean): void {
    if (reset) {
      this.registers.holding.fill(0);
      this.registers.input.fill(0);
      applyFirmwareDefaults(this, this.model);
    }
    this.powered = true;
  }

  /** `count` pulses on digital input `index` (0-based): its 32-bit counter moves on, wrapping as the firmware's. */
  addPulses(index: number, count: number): number {
    const inputs = this.model.features.find((feature) => feature.type === 'DI');
    if (!inputs || inputs.type !== 'DI' || index >= inputs.count) throw new RangeError(`the board has no digital input ${index}`);
    const address = inputs.counter_reg + 2 * index;
    const value = (this.get('holding', address) + this.get('holding', address + 1) * 65536 + count) % 2 ** 32;
    this.set('holding', address, value & 0xffff);
    this.set('holding', address + 1, Math.floor(value / 65536));
    return value;
  }

  setBit(address: number, bit: number, on: boolean): void {
    const word = this.get('holding', address);
    this.registers.holding[address] = on ? word | (1 << bit) : word & ~(1 << bit);
    this.directSwitch.changed(this, address, word, this.get('holding', address));
  }

  /** Records a digital input edge in the change log. */
  logInput(address: number, bit: number, on: boolean): void {
    if (this.inputLog.length >= INPUT_LOG_LIMIT) this.inputLog.splice(0, INPUT_LOG_LIMIT / 10);
    this.inputLog.push({ at: Date.now(), address, bit, on });
  }

  /** Note registers just set from outside; returns the moment (ns, monotonic clock). */
  markChanged(space: Space, address: number, count: number): bigint {
    const at = process.hrtime.bigint();
    this.change = { space, from: address, to: address + count, at, readAt: undefined };
    return at;
  }

  /** The last outside change and the first read covering it (ns, monotonic clock), if any. */
  lastChange(): { at: bigint; readAt: bigint | undefined } | undefined {
    return this.change && { at: this.change.at, readAt: this.change.readAt };
  }

  readRegisters(space: Space, address: number, quantity: number): number[] | undefined {
    this.reads++;
    const change = this.change;
    if (change && change.readAt === undefined && change.space === space && address < change.to && address + quantity > change.from) {
      change.readAt = process.hrtime.bigint();
    }
    if (!this.allPresent(space, address, quantity)) return undefined;
    const registers = this.registers[space];
    const values = new Array<number>(quantity);
    for (let i = 0; i < quantity; i++) values[i] = registers[address + i]!;
    return values;
  }

  readBits(space: 'coil' | 'discrete', address: number, quantity: number): boolean[] | undefined {
    this.reads++;
    if (space === 'discrete') return undefined;
    const bits: boolean[] = [];
    for (let coil = address; coil < address + quantity; coil++) {
      const target = this.coils.get(coil);
      if (!target) return undefined;
      // Action coils (watchdog reset, NV save …) are pulses: they always read 0.
      bits.push(target.kind === 'bit' && ((this.registers.holding[target.reg]! >> target.bit) & 1) === 1);
    }
    return bits;
  }

  writeRegisters(address: number, values: number[]): boolean {
    this.writes++;
    this.masterWriteAt = process.hrtime.bigint();
    if (!this.allPresent('holding', address, values.length)) return false;
    values.forEach((value, i) => this.set('holding', address + i, value));
    return true;
  }

  writeCoils(address: number, values: boolean[]): boolean {
    this.writes++;
    this.masterWriteAt = process.hrtime.bigint();
    for (let i = 0; i < values.length; i++) if (!this.coils.has(address + i)) return false;
    values.forEach((on, i) => {
      const target = this.coils.get(address + i);
      if (target?.kind === 'bit') this.setBit(target.reg, target.bit, on);
      else if (target && on) this.actions.push(target.action);
    });
    return true;
  }

  private allPresent(space: Space, address: number, quantity: number): boolean {
    const present = this.present[space];
    for (let i = address; i < address + quantity; i++) if (!present[i]) return false;
    return true;
  }
}
