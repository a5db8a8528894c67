import type { AoFeature } from '../../boards/model.js';
import { channelMode, checkModeRange, checkModeWrite } from './mode.js';
import { round } from '../digital/bits.js';
import { FLOAT_VALUE, type DeviceState } from '../device.js';
import { decimal, oneOf, type FieldSpec } from '../fields.js';
import { SlaveDevice } from '../slave/slave-device.js';
import type { SlaveUnit } from '../slave/slave-unit.js';

// Analog output `ao` of extension modules and the Unipi 1.1: a 12-bit DAC per
// channel at val_reg + i, 2.5 mV per step (0…4095 → 0…10.2375 V).

const VOLTS_PER_STEP = 0.0025;
const MAX_STEP = 4095;

interface AoWrite {
  value: number;
  mode: string;
}

export class AnalogOutput extends SlaveDevice<AoWrite> {
  readonly type = 'ao' as const;
  /** A float32 or scaled reading: EVOK writes it as a float (`0.0`, `5.0`). */
  protected override readonly floatFields = FLOAT_VALUE;
  protected readonly writeSpec: FieldSpec<AoWrite>;

  constructor(
    circuit: string,
    slave: SlaveUnit,
    private readonly feature: AoFeature,
    private readonly index: number,
  ) {
    super(circuit, slave);
    // The DAC's own ceiling; the active mode's range narrows it (checkWrite).
    this.writeSpec = { value: decimal(0, MAX_STEP * VOLTS_PER_STEP), mode: oneOf(Object.keys(feature.modes)) };
  }

  registers(): Array<{ space: 'holding'; address: number }> {
    const { val_reg, mode_reg } = this.feature;
    const addresses = [val_reg + this.index];
    if (mode_reg !== undefined) addresses.push(mode_reg + this.index);
    return addresses.map((address) => ({ space: 'holding', address }));
  }

  protected decode(): DeviceState {
    const { modes } = this.feature;
    const mode = this.mode();
    const active = mode === null ? undefined : modes[mode];
    const raw = this.slave.cache.get('holding', this.feature.val_reg + this.index);
    return {
      dev: 'ao',
      circuit: this.circuit,
      mode,
      modes,
      value: raw === null ? null : round(raw * VOLTS_PER_STEP, 3),
      unit: active?.unit ?? null,
      range: active?.range ?? null,
    };
  }

  private mode(): string | null {
    return channelMode(this.feature, this.slave.cache, this.index);
  }

  override prepareWrite(raw: Readonly<Record<string, unknown>>): () => Promise<void> {
    const action = super.prepareWrite(raw);
    checkModeWrite(raw['mode'], this.feature, this.mode(), 'output');
    return action;
  }

  protected override checkWrite(params: Partial<AoWrite>): void {
    checkModeRange(params.value, this.feature.modes, params.mode ?? this.mode());
  }

  protected async apply(params: Partial<AoWrite>): Promise<void> {
    const { mode_reg, modes, val_reg } = this.feature;
    if (params.mode !== undefined && mode_reg !== undefined && modes[params.mode]!.value !== undefined) {
      await this.slave.writeRegister(mode_reg + this.index, modes[params.mode]!.value!);
    }
    if (params.value !== undefined) {
      // Rounded, not truncated as EVOK did: 1.5 V must read back as 1.5, not 1.4975.
      const step = Math.min(MAX_STEP, Math.round(params.value / VOLTS_PER_STEP));
      await this.slave.writeRegister(val_reg + this.index, step);
    }
  }
}
