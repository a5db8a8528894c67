import type { DeviceType } from '../devices/device.js';
import { RequestError } from '../registry/request-error.js';

// EVOK's WebSocket `set` and JSON-RPC `<type>_set` hand their value to the
// device's setter as its first positional parameter, which is not always
// `value`: a bare number sent to a DI sets its debounce. This table keeps that
// meaning while every write still goes through named, validated fields.

const FIRST_PARAMETER: Readonly<Partial<Record<DeviceType, string>>> = {
  do: 'value',
  ro: 'value',
  led: 'value',
  watchdog: 'value',
  ao: 'value',
  register: 'value',
  owpower: 'value',
  nv_save: 'value',
  di: 'debounce',
  ai: 'mode',
  sensor: 'interval',
  owbus: 'scan_interval',
  run: 'save',
  modbus_slave: 'print_log',
  cover: 'command',
};

export function isFieldObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Fields the write path's control layer reads beside a plain value (a
 * timed pulse: `{"value": 1, "pulse_ms": 500}`), kept when the value is
 * taken as the first positional parameter.
 */
const BESIDE_VALUE = ['pulse_ms'] as const;

/**
 * Fields to write from a `set` argument: an object names its fields, any
 * other value is the type's first positional parameter (with the control
 * fields found `beside` it in the same message).
 */
export function fieldsFromValue(type: DeviceType, value: unknown, beside?: Readonly<Record<string, unknown>>): Record<string, unknown> {
  if (isFieldObject(value)) return value;
  const field = FIRST_PARAMETER[type];
  if (field === undefined) throw new RequestError(400, 'ValidationError', `${type} devices are read-only`);
  const fields: Record<string, unknown> = { [field]: value };
  for (const name of BESIDE_VALUE) if (beside?.[name] !== undefined) fields[name] = beside[name];
  return fields;
}
