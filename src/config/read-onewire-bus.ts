// Reads a 1-Wire bus of `comm_channels` (EVOK's `type: OWFS`; `OWBUS` is what
// EVOK's docs and older autogen files write, and means the same here).
import type { ConfigSection } from './section.js';
import type { DeviceInfoConfig, OneWireBusConfig } from './types.js';
import {
  DEFAULT_ONEWIRE_INTERVAL_S,
  DEFAULT_ONEWIRE_SCAN_INTERVAL_S,
  DEFAULT_OWSERVER_PORT,
  DEFAULT_OWSERVER_TIMEOUT_MS,
  ONEWIRE_SCAN_INTERVAL_FALLBACK_S,
} from './defaults.js';
import { SIMULATED_FAMILIES } from '../sim/onewire.js';

/** A day: longer periods are typing mistakes, and timers cannot wait much longer anyway. */
const MAX_PERIOD_S = 86_400;

export function readOneWireBus(
  name: string,
  type: 'OWFS' | 'OWBUS',
  bus: ConfigSection,
  readDeviceInfo: (info: ConfigSection) => DeviceInfoConfig,
): OneWireBusConfig {
  const interval = bus.number('interval', DEFAULT_ONEWIRE_INTERVAL_S, 0);
  const scan = bus.number('scan_interval', DEFAULT_ONEWIRE_SCAN_INTERVAL_S, -Infinity);
  const config: OneWireBusConfig = {
    name,
    type,
    hostname: bus.string('hostname', '127.0.0.1'),
    port: bus.integer('port', DEFAULT_OWSERVER_PORT, 1, 65535),
    timeoutMs: bus.integer('timeout', DEFAULT_OWSERVER_TIMEOUT_MS, 1, 60_000),
    // A sensor read every 0 s would keep owserver busy for nothing; 1 s is the fastest a DS18B20 converts twice.
    interval: Math.min(Math.max(interval, 1), MAX_PERIOD_S),
    // EVOK: a scan interval of 0 or less means an hourly scan.
    scanInterval: scan <= 0 ? ONEWIRE_SCAN_INTERVAL_FALLBACK_S : Math.min(Math.max(scan, 1), MAX_PERIOD_S),
  };
  const owpower = bus.optionalString('owpower');
  if (owpower !== undefined) config.owpower = owpower;
  if (bus.has('simulate')) {
    const node = bus.value('simulate');
    const families = bus.stringList('simulate', []).map((family) => family.toUpperCase().padStart(2, '0'));
    const unknown = families.filter((family) => !SIMULATED_FAMILIES.includes(family));
    if (unknown.length > 0 && node) bus.mismatch(node, 'simulate', `a list of 1-Wire family codes (${SIMULATED_FAMILIES.join(', ')})`);
    else config.simulate = families;
  } else {
    bus.markKnown('simulate');
  }
  if (bus.has('device_info')) config.deviceInfo = readDeviceInfo(bus.section('device_info'));
  else bus.markKnown('device_info');
  if (bus.has('devices')) {
    // EVOK crashed on each entry here; sensors are found by searching the bus.
    bus.warn(bus.value('devices')!.origin, 'devices', '1-Wire sensors are discovered on the bus; devices listed here are ignored');
  } else {
    bus.markKnown('devices');
  }
  return config;
}
