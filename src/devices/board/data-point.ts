import type { DataPointFeature, RegisterSpace } from '../../boards/model.js';
import { float32 } from '../digital/bits.js';
import { FLOAT_VALUE, type DeviceState } from '../device.js';
import { ValidationError, type FieldSpec, type UnknownField } from '../fields.js';
import { SlaveDevice } from '../slave/slave-device.js';
import type { SlaveUnit } from '../slave/slave-unit.js';

// Read-only scaled value `data_point` (sensors such as IAQ and xG18): one
// register (signed16, unsigned16) or two (float32, high word first) at
// value_reg + i, times `factor` plus `offset`, with an optional validity bit.
// Only an alias can be written.

export class DataPoint extends SlaveDevice {
  readonly type = 'data_point' as const;
  protected readonly writeSpec: FieldSpec<object> = {};
  /** EVOK's words for any write but an alias (it raised a plain Exception). */
  protected override readonly unknownField: UnknownField = () => new ValidationError('Data point object is read-only', 'Exception');
  protected override readonly floatFields = FLOAT_VALUE;
  private readonly space: RegisterSpace;
  private readonly address: number;

  constructor(
    slave: SlaveUnit,
    private readonly feature: DataPointFeature,
    private readonly index: number,
  ) {
    const address = feature.value_reg + index;
    super(`${slave.name}_${address}`, slave);
    this.address = address;
    this.space = feature.reg_type ?? 'holding';
  }

  registers(): Array<{ space: RegisterSpace; address: number }> {
    const addresses = [this.address];
    if (this.feature.datatype === 'float32') addresses.push(this.address + 1);
    if (this.feature.valid_mask_reg !== undefined) addresses.push(this.feature.valid_mask_reg);
    return addresses.map((address) => ({ space: this.space, address }));
  }

  protected decode(): DeviceState {
    const { name, unit, valid_mask_reg } = this.feature;
    const state: DeviceState = { dev: 'data_point', circuit: this.circuit, value: this.value() };
    if (name !== undefined) state['name'] = name;
    if (valid_mask_reg !== undefined) {
      const mask = this.slave.cache.get(this.space, valid_mask_reg);
      state['valid'] = mask === null ? null : ((mask >> this.index) & 1) === 1;
    }
    if (unit !== undefined) state['unit'] = unit;
    return state;
  }

  /**
   * EVOK's value is a Python float when the register is a float32 or when a
   * fractional factor or offset scaled it; a whole factor keeps an int.
   */
  protected override isFloat(field: string, value: unknown): boolean {
    if (field !== 'value' || typeof value !== 'number') return false;
    const { datatype, factor = 1, offset = 0 } = this.feature;
    return datatype === 'float32' || ((factor !== 1 || offset !== 0) && !(Number.isInteger(factor) && Number.isInteger(offset)));
  }

  private value(): number | string | null {
    const raw = this.raw();
    if (raw === null) return null;
    // Kept from EVOK: a float32 NaN (sensor not ready) is reported as the string "NaN".
    if (Number.isNaN(raw)) return 'NaN';
    const { factor = 1, offset = 0 } = this.feature;
    if (factor === 1 && offset === 0) return raw;
    // Twelve significant digits hide binary noise such as 21.400000000000002.
    return Number((raw * factor + offset).toPrecision(12));
  }

  private raw(): number | null {
    const { cache } = this.slave;
    switch (this.feature.datatype ?? 'signed16') {
      case 'signed16': {
        // Sign-extended: EVOK showed −5.00 °C as 650.36.
        const word = cache.get(this.space, this.address);
        return word === null ? null : (word << 16) >> 16;
      }
      case 'unsigned16':
        return cache.get(this.space, this.address);
      case 'float32': {
        const words = cache.getRun(this.space, this.address, 2);
        return words === null ? null : float32(words, false);
      }
    }
  }

  /** Only alias-only writes get here (nothing is writable), and the alias is set by the registry. */
  protected async apply(): Promise<void> {}
}
