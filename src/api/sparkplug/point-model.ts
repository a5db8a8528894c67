import type { Device } from '../../devices/device.js';
import type { SlaveUnit } from '../../devices/slave/slave-unit.js';
import type { OneWireBus } from '../../onewire/bus.js';
import { DataType, type MetricValue } from './payload-types.js';

// The one mapping from iogate's devices to Sparkplug B: each Modbus slave
// (config device key `1`, `2` …) and each 1-Wire bus (`OWBUS`) is a Sparkplug
// device; each circuit's fields are its metrics, named
// `<type>/<circuit>/<field>` after EVOK's `dev` name, with a datatype from
// the register map and a node-wide alias used in DATA and in commands.

export interface FieldMapping {
  field: string;
  datatype: number;
  /**
   * Engineering unit, sent as the metric property `engUnit` in births;
   * `device`: the device's own `unit` field (analog values: the mode's unit).
   */
  unit?: string;
}

/** The unit is the device's `unit` field (it follows the analog mode). */
const DEVICE_UNIT = 'device';

/**
 * Every `dev` name /rest/all can list, with the fields that become metrics,
 * or why it has none. A new device type without an entry fails a unit test.
 */
export const FIELD_MAP: Readonly<Record<string, readonly FieldMapping[] | { none: string }>> = {
  di: [
    { field: 'value', datatype: DataType.Boolean },
    { field: 'counter', datatype: DataType.UInt64 },
    { field: 'debounce', datatype: DataType.UInt16, unit: 'ms' },
  ],
  do: [
    { field: 'value', datatype: DataType.Boolean },
    { field: 'pwm_duty', datatype: DataType.Double, unit: '%' },
    { field: 'pwm_freq', datatype: DataType.Double, unit: 'Hz' },
  ],
  ro: [{ field: 'value', datatype: DataType.Boolean }],
  led: [{ field: 'value', datatype: DataType.Boolean }],
  owpower: [{ field: 'value', datatype: DataType.Boolean }],
  nv_save: [{ field: 'value', datatype: DataType.Boolean }],
  ai: [{ field: 'value', datatype: DataType.Double, unit: DEVICE_UNIT }],
  ao: [{ field: 'value', datatype: DataType.Double, unit: DEVICE_UNIT }],
  wd: [
    { field: 'value', datatype: DataType.Boolean },
    { field: 'timeout', datatype: DataType.UInt32, unit: 'ms' },
    { field: 'was_wd_reset', datatype: DataType.Boolean },
  ],
  register: [{ field: 'value', datatype: DataType.UInt16 }],
  data_point: [{ field: 'value', datatype: DataType.Double, unit: DEVICE_UNIT }],
  temp: [
    { field: 'value', datatype: DataType.Double, unit: '°C' },
    // True while the sensor's reads fail or it left the bus: its value is then the last one read.
    { field: 'lost', datatype: DataType.Boolean },
  ],
  '1wdevice': [
    // DS2438 multisensors; PIO chips carry `value` (the pin levels) instead.
    { field: 'temp', datatype: DataType.Double, unit: '°C' },
    { field: 'humidity', datatype: DataType.Double, unit: '%' },
    { field: 'vdd', datatype: DataType.Double, unit: 'V' },
    { field: 'vad', datatype: DataType.Double, unit: 'V' },
    { field: 'vis', datatype: DataType.Double, unit: 'V' },
    { field: 'value', datatype: DataType.UInt8 },
    { field: 'lost', datatype: DataType.Boolean },
  ],
  modbus_slave: { none: 'its state is the Sparkplug device itself: DBIRTH while it answers, DDEATH while offline' },
  device_info: { none: 'model and serial number are node properties' },
  owbus: { none: 'the 1-Wire bus is the Sparkplug device itself; its search settings stay in the other APIs' },
  run: { none: 'the alias table is not process data' },
  // One Sparkplug device `automations` holds them all; `enabled` is writable (DCMD), as over REST.
  automation: [
    { field: 'enabled', datatype: DataType.Boolean },
    { field: 'offloaded', datatype: DataType.Boolean },
    { field: 'runs', datatype: DataType.UInt64 },
  ],
};

export interface Point {
  /** The Sparkplug device the metric belongs to. */
  group: SparkplugDevice;
  device: Device;
  field: string;
  name: string;
  alias: number;
  datatype: number;
  writable: boolean;
  unit?: string;
  /** The engineering unit of the last birth, for units that follow a mode. */
  bornUnit?: string;
  /** The value last published (birth or data); undefined before the first. */
  sent?: MetricValue;
}

export interface SparkplugDevice {
  id: string;
  kind: 'modbus' | '1-wire' | 'automations';
  points: Point[];
  /** Whether it is online now (a slave that answers, a 1-Wire bus whose owserver answers). */
  online(): boolean;
}

/** The engineering unit of a metric now (an analog unit follows the device's mode), if it has one. */
export function engUnitOf(point: Pick<Point, 'device' | 'unit'>): string | undefined {
  if (point.unit !== DEVICE_UNIT) return point.unit;
  const unit = point.device.full()['unit'];
  return typeof unit === 'string' && unit !== '' ? unit : undefined;
}

/** The datatype's value of a field as EVOK shows it; null while unknown. */
export function metricValue(point: Pick<Point, 'device' | 'field' | 'datatype'>): MetricValue {
  const raw = point.device.full()[point.field];
  if (raw === null || raw === undefined) return null;
  if (point.datatype === DataType.Boolean) return typeof raw === 'boolean' ? raw : Number(raw) !== 0;
  if (typeof raw === 'number') return raw;
  if (typeof raw === 'boolean') return raw ? 1 : 0;
  return null;
}

export function mappingOf(device: Device): readonly FieldMapping[] {
  const dev = String(device.full()['dev'] ?? device.type);
  const mapping = FIELD_MAP[dev];
  if (mapping === undefined || !Array.isArray(mapping)) return [];
  // A field the device does not have (a PIO chip has no temperature) is not a metric of it.
  const state = device.full();
  return (mapping as readonly FieldMapping[]).filter(({ field }) => field in state);
}

export class PointModel {
  readonly devices: SparkplugDevice[] = [];
  private readonly byDevice = new Map<Device, Point[]>();
  private readonly byAlias = new Map<number, Point>();
  private readonly byName = new Map<string, Point>();
  private nextAlias = 1;
  private readonly oneWireGroups = new Map<OneWireBus, SparkplugDevice>();

  constructor(slaves: readonly SlaveUnit[], oneWireBuses: readonly OneWireBus[], automations: readonly Device[] = []) {
    for (const slave of slaves) {
      const group: SparkplugDevice = { id: slave.name, kind: 'modbus', points: [], online: () => slave.answering };
      this.devices.push(group);
      for (const device of slave.devices) this.addDevice(group, device);
    }
    for (const bus of oneWireBuses) {
      const group: SparkplugDevice = { id: bus.name, kind: '1-wire', points: [], online: () => bus.connected };
      this.devices.push(group);
      this.oneWireGroups.set(bus, group);
      this.adoptSensors(bus);
    }
    if (automations.length > 0) {
      // Always online: automations run in iogate itself.
      const group: SparkplugDevice = { id: 'automations', kind: 'automations', points: [], online: () => true };
      this.devices.push(group);
      for (const device of automations) this.addDevice(group, device);
    }
  }

  /** Adds the sensors a 1-Wire bus found since the last call; true when its metric set grew. */
  adoptSensors(bus: OneWireBus): boolean {
    const group = this.oneWireGroups.get(bus);
    if (!group) return false;
    let grew = false;
    for (const sensor of bus.sensors.values()) {
      if (this.byDevice.has(sensor)) continue;
      this.addDevice(group, sensor);
      grew = true;
    }
    return grew;
  }

  get oneWireBuses(): IterableIterator<OneWireBus> {
    return this.oneWireGroups.keys();
  }

  pointsOf(device: Device): readonly Point[] | undefined {
    return this.byDevice.get(device);
  }

  byAliasNumber(alias: number): Point | undefined {
    return this.byAlias.get(alias);
  }

  find(deviceId: string, name: string): Point | undefined {
    return this.byName.get(`${deviceId}\u0000${name}`);
  }

  device(id: string): SparkplugDevice | undefined {
    return this.devices.find((device) => device.id === id);
  }

  get pointCount(): number {
    return this.byAlias.size;
  }

  private addDevice(group: SparkplugDevice, device: Device): void {
    const mapping = mappingOf(device);
    if (mapping.length === 0) return;
    const dev = String(device.full()['dev'] ?? device.type);
    const writable = new Set(device.writableFields);
    const points: Point[] = [];
    for (const { field, datatype, unit } of mapping) {
      const point: Point = {
        ...(unit === undefined ? {} : { unit }),
        group,
        device,
        field,
        name: `${dev}/${device.circuit}/${field}`,
        alias: this.nextAlias++,
        datatype,
        writable: writable.has(field),
      };
      points.push(point);
      group.points.push(point);
      this.byAlias.set(point.alias, point);
      this.byName.set(`${group.id}\u0000${point.name}`, point);
    }
    this.byDevice.set(device, points);
  }
}
