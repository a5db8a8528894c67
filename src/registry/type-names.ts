import type { DeviceType } from '../devices/device.js';

// EVOK's type names: canonical ones, the alternate spellings its clients use in
// URLs, bulk, WebSocket and MQTT, and the listing order of `/rest/all`.

const ALTERNATES: Readonly<Record<string, DeviceType>> = {
  digitalinput: 'di',
  input: 'di',
  digitaloutput: 'do',
  output: 'do',
  relay: 'ro',
  analoginput: 'ai',
  analogoutput: 'ao',
  wd: 'watchdog',
  temp: 'sensor',
};

export const CANONICAL_TYPES: readonly DeviceType[] = [
  'ro', 'do', 'di', 'ai', 'ao', 'sensor', 'owbus', 'modbus_slave', 'led', 'watchdog',
  'register', 'data_point', 'device_info', 'owpower', 'run', 'nv_save', 'cover', 'automation',
];

/**
 * Types read only where a client names them (`/rest/interlock`): not in the
 * listings EVOK's clients walk, which must look as EVOK's did.
 */
const NAMED_ONLY: readonly DeviceType[] = ['interlock'];

/** Order of `GET /rest/all` (no run, no nv_save). */
export const REST_ALL_ORDER: readonly DeviceType[] = [
  'di', 'ro', 'do', 'ai', 'ao', 'sensor', 'led', 'watchdog', 'modbus_slave', 'owpower',
  'register', 'data_point', 'owbus', 'device_info', 'cover', 'automation',
];

const CANONICAL = new Set<string>([...CANONICAL_TYPES, ...NAMED_ONLY]);

export function canonicalType(name: string): DeviceType | undefined {
  if (CANONICAL.has(name)) return name as DeviceType;
  return Object.hasOwn(ALTERNATES, name) ? ALTERNATES[name] : undefined;
}

/** Numeric type ids of EVOK 2, found in alias files of version 1.0 and early 2.0. */
const V2_TYPE_IDS: Readonly<Record<number, DeviceType>> = {
  0: 'ro', 1: 'di', 2: 'ai', 3: 'ao', 5: 'sensor', 8: 'owbus', 15: 'modbus_slave', 17: 'do', 18: 'led',
  19: 'watchdog', 20: 'register', 24: 'data_point', 28: 'device_info', 29: 'owpower', 30: 'run', 31: 'nv_save',
};

export function typeFromV2Id(id: number): DeviceType | undefined {
  return V2_TYPE_IDS[id];
}

/**
 * Type names EVOK validated a write against a schema with, as written in the
 * URL (not by canonical type): `relay` was checked with the DO schema while
 * `ro` had none. A mistake one of these schemas caught was a
 * `ValidationError`; the same mistake under a name without a schema reached
 * Python's `set()` and was a `TypeError`.
 */
const SCHEMA_NAMES: ReadonlySet<string> = new Set([
  'input', 'di', 'output', 'do', 'relay', 'register', 'ai', 'analoginput', 'ao', 'analogoutput',
  'led', 'watchdog', 'wd', 'temp', 'sensor', 'owbus', 'owpower', 'run',
]);

export function hasEvokSchema(name: string): boolean {
  return SCHEMA_NAMES.has(name);
}

/** The fields of EVOK's Relay/DO schema, which `relay` writes were checked with. */
export const RELAY_SCHEMA_FIELDS: ReadonlySet<string> = new Set(['value', 'mode', 'timeout', 'pwm_freq', 'pwm_duty', 'alias']);

/**
 * Types EVOK knew but whose objects have no JSON form: `tcp_bus` holds the
 * Modbus buses by name (reading one failed with an AttributeError), the
 * others were always empty.
 */
export const OBJECTLESS_TYPES: ReadonlySet<string> = new Set(['tcp_bus', 'serial_bus', 'board', 'ds2408']);
