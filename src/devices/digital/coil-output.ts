import { bitOf } from './bits.js';
import type { DeviceState } from '../device.js';
import { binary, type FieldSpec } from '../fields.js';
import { SlaveDevice } from '../slave/slave-device.js';
import type { SlaveUnit } from '../slave/slave-unit.js';

// An on/off output switched by its own coil and read back as one bit of a
// shared value register: what relays and user LEDs have in common.

interface CoilOutputWrite {
  value: 0 | 1;
}

export interface CoilOutputFeature {
  val_reg: number;
  val_coil: number;
}

export abstract class CoilOutput extends SlaveDevice<CoilOutputWrite> {
  protected readonly writeSpec: FieldSpec<CoilOutputWrite> = { value: binary };

  constructor(
    circuit: string,
    slave: SlaveUnit,
    private readonly feature: CoilOutputFeature,
    private readonly index: number,
  ) {
    super(circuit, slave);
  }

  registers(): Array<{ space: 'holding'; address: number }> {
    return [{ space: 'holding', address: this.feature.val_reg }];
  }

  protected decode(): DeviceState {
    return { dev: this.type, circuit: this.circuit, value: bitOf(this.slave.cache, this.feature.val_reg, this.index) };
  }

  /** Reads the value register afresh (ahead of the polls), when a failed write left the state in doubt. */
  async readBack(): Promise<void> {
    await this.slave.readRegisters('holding', this.feature.val_reg, 1);
    this.slave.refreshAfterWrite(this);
  }

  protected async apply(params: Partial<CoilOutputWrite>): Promise<void> {
    if (params.value === undefined) return;
    const { val_coil, val_reg } = this.feature;
    await this.slave.writeCoil(val_coil + this.index, params.value === 1, { register: val_reg, bit: this.index % 16 });
  }
}
