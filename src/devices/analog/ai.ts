import type { AiFeature } from '../../boards/model.js';
import { decodeAnalog } from './decode.js';
import { channelMode, checkModeWrite } from './mode.js';
import { FLOAT_VALUE, type DeviceState } from '../device.js';
import { oneOf, type FieldSpec } from '../fields.js';
import { SlaveDevice } from '../slave/slave-device.js';
import type { SlaveUnit } from '../slave/slave-unit.js';

// Analog input `ai`: a 32-bit reading per channel at val_reg + 2i and, on
// boards that can switch it, a mode register per channel at mode_reg + i.

interface AiWrite {
  mode: string;
}

export class AnalogInput extends SlaveDevice<AiWrite> {
  readonly type = 'ai' as const;
  /** A float32 or scaled reading: EVOK writes it as a float (`0.0`, `5.0`). */
  protected override readonly floatFields = FLOAT_VALUE;
  protected readonly writeSpec: FieldSpec<AiWrite>;

  constructor(
    circuit: string,
    slave: SlaveUnit,
    private readonly feature: AiFeature,
    private readonly index: number,
  ) {
    super(circuit, slave);
    this.writeSpec = { mode: oneOf(Object.keys(feature.modes)) };
  }

  registers(): Array<{ space: 'holding'; address: number }> {
    const { val_reg, mode_reg } = this.feature;
    const addresses = [val_reg + 2 * this.index, val_reg + 2 * this.index + 1];
    if (mode_reg !== undefined) addresses.push(mode_reg + this.index);
    return addresses.map((address) => ({ space: 'holding', address }));
  }

  protected decode(): DeviceState {
    const { modes } = this.feature;
    const mode = this.mode();
    const active = mode === null ? undefined : modes[mode];
    const words = this.slave.cache.getRun('holding', this.feature.val_reg + 2 * this.index, 2);
    return {
      dev: 'ai',
      circuit: this.circuit,
      // A mode's transformation applies only while that mode is active (EVOK kept the last one for good).
      value: words === null ? null : decodeAnalog(words, active?.transformation),
      unit: active?.unit ?? null,
      mode,
      modes,
      range: active?.range ?? null,
    };
  }

  private mode(): string | null {
    return channelMode(this.feature, this.slave.cache, this.index);
  }

  override prepareWrite(raw: Readonly<Record<string, unknown>>): () => Promise<void> {
    const action = super.prepareWrite(raw);
    checkModeWrite(raw['mode'], this.feature, this.mode(), 'input');
    return action;
  }

  protected async apply(params: Partial<AiWrite>): Promise<void> {
    const { modes, mode_reg } = this.feature;
    const value = params.mode === undefined ? undefined : modes[params.mode]!.value;
    if (value === undefined || mode_reg === undefined) return;
    await this.slave.writeRegister(mode_reg + this.index, value);
  }
}
