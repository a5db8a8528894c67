import type { DiFeature } from '../../boards/model.js';
import { bitOf, uint32LowFirst, withBit } from './bits.js';
import type { DeviceState } from '../device.js';
import { oneOf, truncated, type FieldSpec } from '../fields.js';
import { SlaveDevice } from '../slave/slave-device.js';
import type { SlaveUnit } from '../slave/slave-unit.js';

interface DiWrite {
  mode: string;
  ds_mode: string;
  counter_mode: string;
  debounce: number;
  counter: number;
}

const COUNTER_MODES = ['Enabled', 'Disabled'];

const DI_SETTINGS: ReadonlySet<string> = new Set(['debounce', 'counter_mode', 'mode', 'ds_mode']);

export class DigitalInput extends SlaveDevice<DiWrite> {
  readonly type = 'di' as const;
  /** EVOK pushes a DI on a new value or count only (its debounce and mode changes are silent). */
  protected override readonly settingFields: ReadonlySet<string> = DI_SETTINGS;
  protected readonly writeSpec: FieldSpec<DiWrite>;
  /** Software-only, as in EVOK: a disabled counter reads as 0. */
  private counterMode = 'Enabled';
  private readonly directSwitch: boolean;

  constructor(
    circuit: string,
    slave: SlaveUnit,
    private readonly feature: DiFeature,
    private readonly index: number,
    private readonly globalId: number,
  ) {
    super(circuit, slave);
    const { modes, ds_modes = ['Simple'] } = feature;
    this.directSwitch =
      modes.includes('DirectSwitch') &&
      feature.direct_reg !== undefined &&
      feature.polar_reg !== undefined &&
      feature.toggle_reg !== undefined;
    this.writeSpec = {
      mode: oneOf(modes),
      ds_mode: oneOf(ds_modes),
      counter_mode: oneOf(COUNTER_MODES),
      debounce: truncated(0, 65535),
      counter: truncated(0, 0xffffffff),
    };
  }

  registers(): Array<{ space: 'holding'; address: number }> {
    const { val_reg, counter_reg, deboun_reg, direct_reg, polar_reg, toggle_reg } = this.feature;
    const addresses = [val_reg, counter_reg + 2 * this.index, deboun_reg + this.index];
    if (this.directSwitch) addresses.push(direct_reg!, polar_reg!, toggle_reg!);
    return addresses.map((address) => ({ space: 'holding', address }));
  }

  protected decode(): DeviceState {
    const { cache } = this.slave;
    const { val_reg, counter_reg, deboun_reg, modes } = this.feature;
    const mode = this.currentMode();
    const state: DeviceState = {
      dev: 'di',
      circuit: this.circuit,
      value: bitOf(cache, val_reg, this.index),
      debounce: cache.get('holding', deboun_reg + this.index),
      counter_modes: COUNTER_MODES,
      counter_mode: this.counterMode,
      counter: this.counterMode === 'Disabled' ? 0 : uint32LowFirst(cache, counter_reg + 2 * this.index),
      mode,
      modes,
    };
    if (mode === 'DirectSwitch') {
      state['ds_mode'] = this.currentDsMode();
      state['ds_modes'] = this.feature.ds_modes ?? ['Simple'];
    }
    state['glob_dev_id'] = this.globalId;
    return state;
  }

  private currentMode(): string | null {
    if (!this.directSwitch) return 'Simple';
    const bit = bitOf(this.slave.cache, this.feature.direct_reg!, this.index);
    return bit === null ? null : bit ? 'DirectSwitch' : 'Simple';
  }

  private currentDsMode(): string | null {
    const { cache } = this.slave;
    const inverted = bitOf(cache, this.feature.polar_reg!, this.index);
    const toggle = bitOf(cache, this.feature.toggle_reg!, this.index);
    if (inverted === null || toggle === null) return null;
    return inverted ? 'Inverted' : toggle ? 'Toggle' : 'Simple';
  }

  protected async apply(params: Partial<DiWrite>): Promise<void> {
    const { slave, index, feature } = this;
    if (params.mode !== undefined && this.directSwitch && params.mode !== this.currentMode()) {
      const [word] = await slave.readRegisters('holding', feature.direct_reg!, 1);
      await slave.writeRegister(feature.direct_reg!, withBit(word!, index, params.mode === 'DirectSwitch'));
    }
    if (params.ds_mode !== undefined && this.directSwitch && this.currentMode() === 'DirectSwitch') {
      const [polarity] = await slave.readRegisters('holding', feature.polar_reg!, 1);
      const [toggle] = await slave.readRegisters('holding', feature.toggle_reg!, 1);
      await slave.writeRegister(feature.polar_reg!, withBit(polarity!, index, params.ds_mode === 'Inverted'));
      await slave.writeRegister(feature.toggle_reg!, withBit(toggle!, index, params.ds_mode === 'Toggle'));
    }
    if (params.counter_mode !== undefined) this.counterMode = params.counter_mode;
    if (params.debounce !== undefined) await slave.writeRegister(feature.deboun_reg + index, params.debounce);
    if (params.counter !== undefined) {
      const counter = params.counter;
      await slave.writeRegisters(feature.counter_reg + 2 * index, [counter & 0xffff, Math.floor(counter / 65536)]);
    }
  }
}
