import { Device, type DeviceState } from '../devices/device.js';
import { RequestError } from '../registry/request-error.js';
import { ValidationError, decimal, flag, type FieldSpec } from '../devices/fields.js';
import type { OneWireBus } from './bus.js';
import { LISTED_CHIPS, MAX_INTERVAL_S } from './sensor.js';

// `owbus`: one configured 1-Wire bus, with EVOK's fields. Writes set the
// search and read periods, search the bus now (`do_scan`), or power-cycle the
// 1-Wire master through the board's `owpower` coil and search again
// (`do_reset`); the flags act only when true (EVOK reset on `false` too).

interface OwBusWrite {
  scan_interval: number;
  interval: number;
  do_scan: boolean;
  do_reset: boolean;
}

export class OneWireBusDevice extends Device<OwBusWrite> {
  readonly type = 'owbus' as const;
  override readonly aliasable = false;
  override readonly eventCapable = false;
  protected readonly writeSpec: FieldSpec<OwBusWrite> = {
    scan_interval: decimal(1, MAX_INTERVAL_S),
    interval: decimal(1, MAX_INTERVAL_S),
    do_scan: flag,
    do_reset: flag,
  };

  constructor(
    private readonly bus: OneWireBus,
    /** The `type` written in the configuration: `OWFS` or `OWBUS`. */
    private readonly busType: string,
    /** Power-cycles the 1-Wire master, when the board has an `owpower` coil. */
    private readonly powerCycle: (() => Promise<void>) | undefined,
  ) {
    super(bus.name);
  }

  protected decode(): DeviceState {
    return {
      dev: 'owbus',
      circuit: this.circuit,
      bus: this.busType,
      scan_interval: this.bus.scanInterval,
      interval: this.bus.interval,
      do_scan: false,
      do_reset: false,
    };
  }

  /** EVOK's `owbus_list`: addresses by chip. */
  list(): Record<string, string[]> {
    const byChip: Record<string, string[]> = {};
    for (const chip of LISTED_CHIPS) byChip[chip] = [];
    for (const sensor of this.bus.sensors.values()) (byChip[sensor.chip] ??= []).push(sensor.address);
    return byChip;
  }

  protected async apply(params: Partial<OwBusWrite>): Promise<void> {
    // Checked before anything is changed, so a refused reset changes nothing.
    if (params.do_reset && !this.powerCycle) throw new ValidationError('1W reset is not supported on this device!');
    if (params.interval !== undefined) this.bus.setInterval(params.interval);
    if (params.scan_interval !== undefined) this.bus.setScanInterval(params.scan_interval);
    if (!params.do_reset && !params.do_scan) return;
    if (params.do_reset) await this.powerCycle!();
    if (!(await this.bus.scanNow())) {
      throw new RequestError(503, 'OwserverUnreachable', `owserver ${this.bus.where} does not answer; the bus was not searched`);
    }
  }
}
