import type { BoardModel, Feature } from '../boards/model.js';
import type { SlaveStore } from '../modbus/slave.js';

// A board that answers Modbus like the real one would, built only from its
// register map: every register of the model's blocks exists, coil writes of
// binary outputs flip their bits in the value registers, and inputs can be
// driven from outside (a toggling pattern, or a test).

type Space = 'holding' | 'input';

interface CoilBit {
  register: number;
  bit: number;
}

export class SimulatedBoard implements SlaveStore {
  private readonly registers: Record<Space, Uint16Array> = {
    holding: new Uint16Array(65536),
    input: new Uint16Array(65536),
  };
  private readonly present: Record<Space, Uint8Array> = {
    holding: new Uint8Array(65536),
    input: new Uint8Array(65536),
  };
  private readonly coilBits = new Map<number, CoilBit>();
  /** Coils that trigger an action (watchdog reset, NV save, 1-Wire power) rather than hold state. */
  private readonly actionCoils = new Set<number>();
  /** Every request served; benchmarks count the poll rate here. */
  requests = 0;

  constructor(readonly model: BoardModel) {
    for (const block of model.blocks) {
      this.present[block.type].fill(1, block.start_reg, block.start_reg + block.count);
    }
    for (const feature of model.features) this.mapCoils(feature);
  }

  private mapCoils(feature: Feature): void {
    switch (feature.type) {
      case 'DO':
      case 'RO':
      case 'LED':
        for (let i = 0; i < feature.count; i++) {
          this.coilBits.set(feature.val_coil + i, { register: feature.val_reg, bit: i % 16 });
        }
        return;
      case 'WD':
        this.actionCoils.add(feature.nv_sav_coil);
        this.actionCoils.add(feature.reset_coil);
        return;
      case 'OWPOWER':
      case 'NV_SAVE':
        this.actionCoils.add(feature.val_coil);
        return;
    }
  }

  get(space: Space, address: number): number {
    return this.registers[space][address]!;
  }

  /** Set a register as the board's firmware would (inputs, counters, analog values). */
  set(space: Space, address: number, value: number): void {
    this.registers[space][address] = value;
  }

  setBit(address: number, bit: number, on: boolean): void {
    const word = this.registers.holding[address]!;
    this.registers.holding[address] = on ? word | (1 << bit) : word & ~(1 << bit);
  }

  readRegisters(space: Space, address: number, quantity: number): number[] | undefined {
    this.requests++;
    if (!this.allPresent(space, address, quantity)) return undefined;
    return Array.from(this.registers[space].subarray(address, address + quantity));
  }

  readBits(space: 'coil' | 'discrete', address: number, quantity: number): boolean[] | undefined {
    this.requests++;
    if (space === 'discrete') return undefined;
    const bits: boolean[] = [];
    for (let coil = address; coil < address + quantity; coil++) {
      const target = this.coilBits.get(coil);
      if (!target) {
        if (!this.actionCoils.has(coil)) return undefined;
        bits.push(false);
        continue;
      }
      bits.push(((this.registers.holding[target.register]! >> target.bit) & 1) === 1);
    }
    return bits;
  }

  writeRegisters(address: number, values: number[]): boolean {
    this.requests++;
    if (!this.allPresent('holding', address, values.length)) return false;
    this.registers.holding.set(values, address);
    return true;
  }

  writeCoils(address: number, values: boolean[]): boolean {
    this.requests++;
    for (let i = 0; i < values.length; i++) {
      if (!this.coilBits.has(address + i) && !this.actionCoils.has(address + i)) return false;
    }
    values.forEach((on, i) => {
      const target = this.coilBits.get(address + i);
      if (target) this.setBit(target.register, target.bit, on);
    });
    return true;
  }

  private allPresent(space: Space, address: number, quantity: number): boolean {
    const present = this.present[space];
    for (let i = address; i < address + quantity; i++) if (!present[i]) return false;
    return true;
  }
}
