import type { DeviceState } from '../device.js';
import { binary, type FieldSpec } from '../fields.js';
import { SlaveDevice } from '../slave/slave-device.js';
import type { SlaveUnit } from '../slave/slave-unit.js';

// A coil that makes the board do something rather than hold a state (power the
// 1-Wire master, store settings in NV memory). The board offers nothing to
// read back, so `value` is the last value written here, 0 until then.

interface CoilActionWrite {
  value: 0 | 1;
}

export abstract class CoilAction extends SlaveDevice<CoilActionWrite> {
  /** As in EVOK: nothing polled can change it, so there is nothing to push. */
  override readonly eventCapable = false;
  protected readonly writeSpec: FieldSpec<CoilActionWrite> = { value: binary };
  private value: 0 | 1 = 0;

  constructor(
    slave: SlaveUnit,
    private readonly coil: number,
  ) {
    super(slave.name, slave);
  }

  protected decode(): DeviceState {
    return { dev: this.type, circuit: this.circuit, value: this.value };
  }

  protected async apply(params: Partial<CoilActionWrite>): Promise<void> {
    if (params.value === undefined) return;
    await this.slave.writeCoil(this.coil, params.value === 1);
    this.value = params.value;
  }
}
