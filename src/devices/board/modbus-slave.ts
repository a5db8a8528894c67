import type { DeviceState } from '../device.js';
import { Device } from '../device.js';
import { ValidationError, type FieldSpec, type UnknownField } from '../fields.js';
import type { PointMeta } from '../quality/point-meta.js';
import type { SlaveUnit } from '../slave/slave-unit.js';

// `modbus_slave`: one configured slave and how its communication goes. EVOK's
// fields come first, unchanged; `online`, `state`, `success_ratio`, `stale_s`
// and `stats` are ours. `online` stays true for a degraded slave (it answers,
// its devices are readable); `state` tells the two apart. Its state is computed on
// every read (last_comm ages by itself) and it is pushed to listeners only when
// the slave goes on- or offline, never as a side effect of polls or writes.

/** How the slave is reached, as EVOK shows it: TCP + host, RTU + serial port. */
export interface SlaveLink {
  type: 'TCP' | 'RTU' | 'SIMULATOR';
  spec: string;
}

/** What the slave is: its board model (`00`, `xS30`) and the Unipi product it belongs to (`M503`), if configured. */
export interface SlaveIdentity {
  model: string;
  product: string | null;
}

export class ModbusSlave extends Device {
  readonly type = 'modbus_slave' as const;
  override readonly aliasable = false;
  override readonly volatile = true;
  /** EVOK's `print_log` wrote nothing and always failed; nothing here is writable. */
  protected readonly writeSpec: FieldSpec<object> = {};
  /** EVOK had no schema for it; its `set()` failed with a TypeError, `print_log` included. */
  protected override readonly unknownField: UnknownField = (field) =>
    new ValidationError(`'${field}' cannot be written: a modbus_slave is read-only (EVOK's print_log always failed)`, 'TypeError');
  /** Seconds, as Python floats in EVOK (`"scan_interval": 1.0`). */
  protected override readonly floatFields: ReadonlySet<string> = new Set(['last_comm', 'scan_interval']);

  constructor(
    private readonly slave: SlaveUnit,
    private readonly link: SlaveLink,
    private readonly identity: SlaveIdentity = { model: slave.model.name, product: null },
  ) {
    super(slave.name);
  }

  protected decode(): DeviceState {
    const { stats } = this.slave;
    return {
      dev: 'modbus_slave',
      circuit: this.circuit,
      // null until the first successful scan (EVOK showed 2147483647 or seconds since 1970).
      last_comm: stats.lastOkAt === 0 ? null : round3((performance.now() - stats.lastOkAt) / 1000),
      slave_id: this.slave.unit,
      modbus_type: this.link.type,
      modbus_spec: this.link.spec,
      scan_interval: round3(this.slave.scanPeriodMs / 1000),
      online: this.slave.answering,
      state: this.slave.state,
      // Share of the last (up to 50) attempts the slave answered.
      success_ratio: round3(this.slave.successRatio),
      // Age of the oldest value its every scan reads, s (null until each was read once).
      stale_s: staleSeconds(this.slave),
      stats: {
        requests: stats.requests,
        timeouts: stats.timeouts,
        errors: stats.errors,
        last_scan_ms: round3(stats.lastScanMs),
      },
    };
  }

  override full(): DeviceState {
    return this.decode();
  }

  /**
   * Which board and product this is, for panels (EVOK's device_info names the
   * product only). In the meta view only, so EVOK's shape stays as it was.
   */
  protected override extraMeta(): Record<string, unknown> {
    return { model: this.identity.model, product: this.identity.product };
  }

  override json(): string {
    return this.stateJson(this.full());
  }

  override pointMeta(now: number): PointMeta {
    return { quality: this.slave.quality(now), confirmedAt: this.slave.stats.lastOkAt };
  }

  /** Reported by the runtime on on/offline transitions instead. */
  override refresh(): boolean {
    return false;
  }

  /** Only alias-only writes get here (nothing is writable), and the alias is set by the registry. */
  protected async apply(): Promise<void> {}
}

function staleSeconds(slave: SlaveUnit): number | null {
  const age = slave.cache.stalestAgeMs();
  return age === null ? null : round3(age / 1000);
}

function round3(value: number): number {
  return Math.round(value * 1000) / 1000;
}
