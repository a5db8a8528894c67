import type { DeviceInfoConfig } from '../../config/types.js';
import { Device, type DeviceState } from '../device.js';
import { ValidationError, type FieldSpec, type UnknownField } from '../fields.js';

// `device_info`: what the configuration says the controller is (family, model,
// serial number, number of sections). Static and read-only. A bus-level entry
// is named by its model, a per-device entry by the device's name.

export class DeviceInfo extends Device {
  readonly type = 'device_info' as const;
  override readonly aliasable = false;
  override readonly eventCapable = false;
  protected readonly writeSpec: FieldSpec<object> = {};
  /** EVOK's device_info has no setter at all: writing it was an AttributeError. */
  protected override readonly unknownField: UnknownField = () => new ValidationError("'DeviceInfo' object has no attribute 'set'", 'AttributeError');

  constructor(
    circuit: string,
    private readonly info: DeviceInfoConfig,
  ) {
    super(circuit);
  }

  protected decode(): DeviceState {
    const { family, model, sn, board_count } = this.info;
    // EVOK's order: circuit last.
    return { dev: 'device_info', family, model, sn, board_count, circuit: this.circuit };
  }

  /** Only alias-only writes get here (nothing is writable), and the alias is set by the registry. */
  protected async apply(): Promise<void> {}
}
