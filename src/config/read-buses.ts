// Reads `comm_channels`: one entry per bus, each with its devices.
import { COUNTER_DEVICE_CLASSES, type BusConfig, type CounterMeta, type DeviceConfig, type DeviceInfoConfig, type OneWireBusConfig } from './types.js';
import type { ConfigSection } from './section.js';
import { formatOrigin, type Origin } from './yaml-tree.js';
import { DEFAULT_RETRIES, DEFAULT_SERIAL_TIMEOUT_MS, DEFAULT_TCP_TIMEOUT_MS } from './defaults.js';
import { readOneWireBus } from './read-onewire-bus.js';

/**
 * Highest `input_scan_frequency`: one read per millisecond, Node's timer
 * resolution; a faster grid would only pile reads onto the bus queue.
 */
const MAX_INPUT_SCAN_HZ = 1000;

/**
 * Device name → where it was first defined. Circuits are named after devices
 * (`1_01`), so the same name on two buses would send one device's writes to
 * the other: start-up refuses it.
 */
type SeenDevices = Map<string, { bus: string; origin: Origin }>;

const BUS_TYPES = 'MODBUSTCP, MODBUSRTU, SIMULATOR, OWFS or OWBUS';

/** Modbus buses and 1-Wire buses are two kinds of bus, kept apart from here on. */
export function readBuses(channels: ConfigSection): { buses: BusConfig[]; oneWireBuses: OneWireBusConfig[] } {
  const buses: BusConfig[] = [];
  const oneWireBuses: OneWireBusConfig[] = [];
  const seen: SeenDevices = new Map();
  for (const { name, section } of channels.children()) {
    const bus = readBus(name, section, seen);
    if (bus === undefined) {
      // ignored, and already warned about
    } else if (isOneWire(bus)) {
      oneWireBuses.push(bus);
    } else {
      buses.push(bus);
    }
    section.warnUnknownKeys();
  }
  return { buses, oneWireBuses };
}

function isOneWire(bus: BusConfig | OneWireBusConfig): bus is OneWireBusConfig {
  return bus.type === 'OWFS' || bus.type === 'OWBUS';
}

function readBus(name: string, bus: ConfigSection, seen: SeenDevices): BusConfig | OneWireBusConfig | undefined {
  // A disabled bus is skipped before anything else is checked: users park
  // half-written buses this way.
  if (!bus.boolean('enabled', true)) {
    bus.ignoreAll();
    return undefined;
  }
  const type = bus.optionalString('type');
  switch (type) {
    case 'MODBUSTCP':
      return {
        type,
        hostname: bus.string('hostname', '127.0.0.1'),
        port: bus.integer('port', 502, 1, 65535),
        ...readCommon(name, bus, DEFAULT_TCP_TIMEOUT_MS, seen),
      };
    case 'MODBUSRTU':
      return {
        type,
        port: bus.requiredString('port', 'the serial device, e.g. /dev/extcomm/0/0'),
        baudrate: bus.integer('baudrate', 19200, 300, 4_000_000),
        parity: bus.choice('parity', ['N', 'E', 'O'] as const, 'N'),
        stopbits: bus.choice('stopbits', [1, 2] as const, 1),
        ...readCommon(name, bus, DEFAULT_SERIAL_TIMEOUT_MS, seen),
      };
    case 'SIMULATOR':
      return {
        type,
        toggleMs: bus.integer('toggle_ms', 2000, 0, 86_400_000),
        ...readCommon(name, bus, DEFAULT_SERIAL_TIMEOUT_MS, seen),
      };
    case 'OWFS':
    case 'OWBUS':
      return readOneWireBus(name, type, bus, (info) => readDeviceInfo(info, 'unknown', 'unknown'));
    // Refused rather than skipped: the boards on it would silently be missing.
    case undefined:
      bus.missing('type', BUS_TYPES);
      break;
    default:
      bus.error(bus.value('type')?.origin ?? bus.at, 'type', `unknown bus type '${type}' (${BUS_TYPES})`);
  }
  // An ignored bus gets one warning, not one more per key we do not read.
  bus.ignoreAll();
  return undefined;
}

function readCommon(name: string, bus: ConfigSection, defaultTimeoutMs: number, seen: SeenDevices) {
  const hasBusInfo = bus.has('device_info');
  return {
    name,
    deviceInfo: hasBusInfo ? readDeviceInfo(bus.section('device_info'), 'unknown', 'unknown') : undefined,
    timeoutMs: bus.integer('timeout', defaultTimeoutMs, 1, 60_000),
    retries: bus.integer('retries', DEFAULT_RETRIES, 0, 10),
    devices: readDevices(name, bus, hasBusInfo, seen),
  };
}

function readDevices(busName: string, bus: ConfigSection, hasBusInfo: boolean, seen: SeenDevices): DeviceConfig[] {
  if (!bus.has('devices')) {
    bus.markKnown('devices');
    bus.warn(bus.at, undefined, 'bus has no devices');
    return [];
  }
  const devices: DeviceConfig[] = [];
  /** Slave id → the device of this bus that has it: two would answer to, and be written as, one. */
  const slaveIds = new Map<number, { name: string; origin: Origin }>();
  for (const { name, section } of bus.section('devices').children()) {
    const device = readDevice(name, section, hasBusInfo);
    section.warnUnknownKeys();
    if (device === undefined) continue;
    const earlier = seen.get(name);
    if (earlier !== undefined) {
      section.error(section.at, undefined, `device name '${name}' is also used on bus ${earlier.bus} (${formatOrigin(earlier.origin)}): their circuits would be the same`);
    } else {
      seen.set(name, { bus: busName, origin: section.at });
    }
    const idOrigin = section.value('slave-id')?.origin ?? section.at;
    const sharing = slaveIds.get(device.slaveId);
    if (sharing !== undefined) {
      section.error(idOrigin, 'slave-id', `slave-id ${device.slaveId} is also device ${sharing.name}'s on this bus (${formatOrigin(sharing.origin)})`);
    } else {
      slaveIds.set(device.slaveId, { name, origin: idOrigin });
    }
    devices.push(device);
  }
  return devices;
}

function readDevice(name: string, device: ConfigSection, hasBusInfo: boolean): DeviceConfig | undefined {
  if (!device.boolean('enabled', true)) {
    device.ignoreAll();
    return undefined;
  }
  const model = readModel(device);
  const modelNode = device.value('model');
  const config: DeviceConfig = {
    name,
    model,
    modelAt: `${modelNode ? formatOrigin(modelNode.origin) : '?'}: ${device.path}.model`,
    modelOrigin: modelNode?.origin,
    slaveId: device.integer('slave-id', 1, 0, 247),
    scanFrequency: device.number('scan_frequency', 50, 0),
    scanEnabled: device.boolean('scan_enabled', true),
    inputScanFrequency: device.integer('input_scan_frequency', 0, 0, MAX_INPUT_SCAN_HZ),
    counterTotal: readCounterTotal(device),
  };
  const counters = readCounters(device);
  if (counters !== undefined) config.counters = counters;
  // EVOK registers a per-device device_info when the bus has none, or when
  // the device brings its own.
  if (!hasBusInfo || device.has('device_info')) {
    config.deviceInfo = readDeviceInfo(device.section('device_info'), model, familyOf(model));
  } else {
    device.markKnown('device_info');
  }
  return config;
}

/**
 * `counters:` what the pulses of some DIs count, by circuit:
 * `1_01: {unit: L, factor: 0.5, device_class: water}` (a meter giving a pulse
 * every half litre). Read by the Home Assistant discovery.
 */
function readCounters(device: ConfigSection): Record<string, CounterMeta> | undefined {
  if (!device.has('counters')) {
    device.markKnown('counters');
    return undefined;
  }
  const counters: Record<string, CounterMeta> = {};
  for (const { name, section } of device.section('counters').children()) {
    const meta: CounterMeta = {
      unit: section.requiredString('unit', 'the unit of the counted quantity (L, m³, kWh …)'),
      factor: section.number('factor', 1, 0),
    };
    const factorNode = section.value('factor');
    if (meta.factor === 0 && factorNode !== undefined) section.mismatch(factorNode, 'factor', 'a number > 0 (the quantity one pulse counts)');
    if (section.has('device_class')) meta.deviceClass = section.choice('device_class', COUNTER_DEVICE_CLASSES, 'water');
    else section.markKnown('device_class');
    section.warnUnknownKeys();
    counters[name] = meta;
  }
  return counters;
}

/**
 * `counter_total`: true (every DI of the board keeps a never-decreasing total;
 * the default), false, or a list of the DI circuits that keep one.
 */
function readCounterTotal(device: ConfigSection): boolean | string[] {
  const node = device.value('counter_total');
  if (node?.kind === 'seq') return device.stringList('counter_total', []);
  return device.boolean('counter_total', true);
}

/**
 * The hw-definition name. YAML turns an unquoted `model: 00` into the integer
 * 0 (and `13` into 13); EVOK then fails to find the board. Board names are
 * two digits, so an integer is turned back into its zero-padded form.
 */
function readModel(device: ConfigSection): string {
  const node = device.value('model');
  if (node === undefined) {
    device.missing('model', "the board's hw definition name, e.g. '00' or 'xS51'");
    return '';
  }
  if (node.kind === 'scalar' && typeof node.value === 'number' && Number.isInteger(node.value) && node.value >= 0) {
    return String(node.value).padStart(2, '0');
  }
  if (node.kind === 'scalar' && typeof node.value === 'string' && node.value !== '') return node.value;
  device.mismatch(node, 'model', "a hw definition name such as '00' or 'xS51'");
  return '';
}

function familyOf(model: string): string {
  return /^x[smlg]/i.test(model) ? 'Extension' : 'unknown';
}

function readDeviceInfo(info: ConfigSection, defaultModel: string, defaultFamily: string): DeviceInfoConfig {
  const sn = info.has('sn') ? info.integer('sn', 0, 0, Number.MAX_SAFE_INTEGER) : null;
  const config: DeviceInfoConfig = {
    family: info.string('family', defaultFamily),
    model: info.string('model', defaultModel),
    sn,
    board_count: info.integer('board_count', 1, 1, 1000),
  };
  info.markKnown('sn');
  info.warnUnknownKeys();
  return config;
}
