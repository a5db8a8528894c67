import { Device } from '../device.js';
import type { PointMeta } from '../quality/point-meta.js';
import type { SlaveUnit } from './slave-unit.js';

// A device whose state lives in one Modbus slave's registers. It cannot be
// read while that slave is offline, and after a write every device fed by a
// block the write touched is re-decoded, because one register can feed several
// devices (a relay's bit and the raw register holding it).

export abstract class SlaveDevice<P extends object = object> extends Device<P> {
  constructor(
    circuit: string,
    protected readonly slave: SlaveUnit,
  ) {
    super(circuit);
  }

  override unavailable(): string | undefined {
    return this.slave.offlineReason();
  }

  override pointMeta(now: number): PointMeta {
    return this.slave.pointMeta(this, this.writeConfirmedAt, now);
  }

  override settle(): boolean {
    this.slave.refreshAfterWrite(this);
    return false;
  }
}
