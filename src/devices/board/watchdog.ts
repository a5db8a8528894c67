import type { WdFeature } from '../../boards/model.js';
import type { DeviceState } from '../device.js';
import { binary, flag, integer, type FieldSpec } from '../fields.js';
import { SlaveDevice } from '../slave/slave-device.js';
import type { SlaveUnit } from '../slave/slave-unit.js';

// Master watchdog `watchdog` (JSON `dev: "wd"`): the board resets its outputs
// when the master stays silent longer than `timeout` ms while enabled. The
// status register holds the enable bit (0) and the "was reset by the
// watchdog" bit (1).

interface WdWrite {
  value: 0 | 1;
  timeout: number;
  nv_save: boolean;
  reset: boolean;
}

const WAS_RESET_BIT = 0b10;
const WD_SETTINGS: ReadonlySet<string> = new Set(['timeout', 'nv_save']);

export class Watchdog extends SlaveDevice<WdWrite> {
  readonly type = 'watchdog' as const;
  /** EVOK pushes a watchdog when its value changes, never for its timeout. */
  protected override readonly settingFields: ReadonlySet<string> = WD_SETTINGS;
  protected readonly writeSpec: FieldSpec<WdWrite> = {
    value: binary,
    timeout: integer(0, 65535),
    nv_save: flag,
    reset: flag,
  };
  /** Whether settings were saved to NV memory through this device; EVOK never reads it back either. */
  private nvSaved: 0 | 1 = 0;

  constructor(
    circuit: string,
    slave: SlaveUnit,
    private readonly feature: WdFeature,
    private readonly index: number,
  ) {
    super(circuit, slave);
  }

  registers(): Array<{ space: 'holding'; address: number }> {
    const { val_reg, timeout_reg } = this.feature;
    return [val_reg + this.index, timeout_reg + this.index].map((address) => ({ space: 'holding', address }));
  }

  protected decode(): DeviceState {
    const status = this.slave.cache.get('holding', this.feature.val_reg + this.index);
    return {
      dev: 'wd',
      circuit: this.circuit,
      value: status === null ? null : status & 0b11,
      timeout: this.slave.cache.get('holding', this.feature.timeout_reg + this.index),
      was_wd_reset: status === null ? null : (status & WAS_RESET_BIT) === 0 ? 0 : 1,
      nv_save: this.nvSaved,
    };
  }

  protected async apply(params: Partial<WdWrite>): Promise<void> {
    const { val_reg, timeout_reg, nv_sav_coil, reset_coil } = this.feature;
    // The whole status register is written, as EVOK does: it also clears the was-reset bit.
    if (params.value !== undefined) await this.slave.writeRegister(val_reg + this.index, params.value);
    if (params.timeout !== undefined) await this.slave.writeRegister(timeout_reg + this.index, params.timeout);
    // "0" (a form field) means no: EVOK saved and reset on any string.
    if (params.nv_save === true) {
      await this.slave.writeCoil(nv_sav_coil, true);
      this.nvSaved = 1;
    } else if (params.nv_save === false) {
      this.nvSaved = 0;
    }
    if (params.reset === true) {
      await this.slave.writeCoil(reset_coil, true);
      this.nvSaved = 0;
    }
  }
}
