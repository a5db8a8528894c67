import type { AnalogMode, BaoFeature } from '../../boards/model.js';
import { float32, float32Words, round } from '../digital/bits.js';
import { checkModeRange } from './mode.js';
import { FLOAT_VALUE, type DeviceState } from '../device.js';
import { ValidationError, decimal, oneOf, type FieldSpec } from '../fields.js';
import { SlaveDevice } from '../slave/slave-device.js';
import type { SlaveUnit } from '../slave/slave-unit.js';

// Analog output `ao` of the Brain section: the firmware takes the set point as
// a float32 in engineering units (low word first), and in Resistance mode the
// channel measures instead, reporting the resistance in a second float32.

const MODES: Readonly<Record<string, AnalogMode & { value: number }>> = {
  Voltage: { value: 0, unit: 'V', range: [0, 10] },
  Current: { value: 1, unit: 'mA', range: [0, 20] },
  Resistance: { value: 2, unit: 'Ohm', range: [0, 2000] },
};

interface BaoWrite {
  value: number;
  mode: string;
}

export class BrainAnalogOutput extends SlaveDevice<BaoWrite> {
  readonly type = 'ao' as const;
  /** A float32 or scaled reading: EVOK writes it as a float (`0.0`, `5.0`). */
  protected override readonly floatFields = FLOAT_VALUE;
  protected readonly writeSpec: FieldSpec<BaoWrite> = {
    // The widest mode's range; the mode the value is written in narrows it (checkWrite).
    value: decimal(0, Math.max(...Object.values(MODES).map((mode) => mode.range![1]))),
    mode: oneOf(Object.keys(MODES)),
  };

  constructor(
    circuit: string,
    slave: SlaveUnit,
    private readonly feature: BaoFeature,
    private readonly index: number,
  ) {
    super(circuit, slave);
  }

  registers(): Array<{ space: 'holding'; address: number }> {
    const { val_reg, res_val_reg, mode_reg } = this.feature;
    const addresses = [val_reg, val_reg + 1, res_val_reg, res_val_reg + 1].map((address) => address + 2 * this.index);
    if (mode_reg !== undefined) addresses.push(mode_reg + this.index);
    return addresses.map((address) => ({ space: 'holding', address }));
  }

  protected decode(): DeviceState {
    const mode = this.mode();
    const source = mode === 'Resistance' ? this.feature.res_val_reg : this.feature.val_reg;
    const words = mode === null ? null : this.slave.cache.getRun('holding', source + 2 * this.index, 2);
    const value = words === null ? null : round(float32(words, true), 3);
    return {
      dev: 'ao',
      circuit: this.circuit,
      mode,
      modes: MODES,
      unit: mode === null ? null : MODES[mode]!.unit,
      value: value !== null && Number.isFinite(value) ? value : null,
    };
  }

  /** Without a mode register the output is voltage only; any register value but 0 and 1 means Resistance. */
  private mode(): string | null {
    if (this.feature.mode_reg === undefined) return 'Voltage';
    const raw = this.slave.cache.get('holding', this.feature.mode_reg + this.index);
    if (raw === null) return null;
    return raw === 0 ? 'Voltage' : raw === 1 ? 'Current' : 'Resistance';
  }

  override prepareWrite(raw: Readonly<Record<string, unknown>>): () => Promise<void> {
    const action = super.prepareWrite(raw);
    if (this.feature.mode_reg === undefined && raw['mode'] !== undefined && raw['mode'] !== 'Voltage') {
      throw new ValidationError('mode: this output has no mode register and is voltage only');
    }
    return action;
  }

  protected override checkWrite(params: Partial<BaoWrite>): void {
    checkModeRange(params.value, MODES, params.mode ?? this.mode());
  }

  protected async apply(params: Partial<BaoWrite>): Promise<void> {
    const { mode_reg, val_reg } = this.feature;
    const previous = this.slave.cache.getRun('holding', val_reg + 2 * this.index, 2);
    if (params.mode !== undefined && mode_reg !== undefined) {
      // EVOK wrote 3 for Resistance while advertising 2; the advertised value is the one written.
      await this.slave.writeRegister(mode_reg + this.index, MODES[params.mode]!.value);
    }
    const setPoint =
      params.value ?? (params.mode !== undefined && params.mode !== 'Resistance' && previous !== null ? float32(previous, true) : undefined);
    // After a switch to Voltage or Current the set point is sent again, as EVOK does,
    // so the firmware applies it in the new mode.
    if (setPoint !== undefined && Number.isFinite(setPoint)) {
      await this.slave.writeRegisters(val_reg + 2 * this.index, float32Words(setPoint, true));
    }
  }
}
