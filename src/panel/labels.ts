import type { Device } from './api.js';

// Human names for types, and the accessible name of a device's controls:
// the type and circuit always, the alias in front when there is one.

const TYPE_NAMES: Record<string, string> = {
  di: 'Digital inputs', input: 'Digital inputs',
  do: 'Digital outputs', output: 'Digital outputs',
  ro: 'Relays', relay: 'Relays',
  led: 'LEDs',
  ai: 'Analog inputs', ao: 'Analog outputs',
  wd: 'Watchdogs', watchdog: 'Watchdogs',
  register: 'Registers', data_point: 'Data points',
  modbus_slave: 'Board link', device_info: 'Board information',
  owpower: '1-Wire power', nv_save: 'Non-volatile save',
  temp: 'Temperatures', sensor: 'Sensors', '1wdevice': '1-Wire devices', owbus: '1-Wire buses',
  run: 'Service',
  cover: 'Covers',
  automation: 'Automations',
};

export function typeName(dev: string): string {
  return TYPE_NAMES[dev] ?? dev;
}

export function alias(device: Device): string {
  return typeof device.alias === 'string' ? device.alias : '';
}

/** "do 1_01", or "Pump (do 1_01)" once it has an alias. */
export function deviceLabel(device: Device): string {
  const base = `${device.dev} ${device.circuit}`;
  const name = alias(device);
  return name ? `${name} (${base})` : base;
}

/** What a 1-Wire device is, for its card's title; '' for anything else. */
export function sensorTitle(device: Device): string {
  switch (device.dev) {
    case 'temp':
      return 'Thermometer';
    case '1wdevice':
      return 'humidity' in device ? 'Humidity sensor' : 'Digital I/O';
    case 'owbus':
      return '1-Wire bus';
    default:
      return '';
  }
}

/** 1-Wire devices have a section of their own. */
export const ONE_WIRE_BOARD = '1-wire';
const ONE_WIRE_TYPES = new Set(['temp', '1wdevice', 'sensor', 'owbus']);

/** The board (slave) a device belongs to: its circuit's group number, or the circuit of a per-board device. */
export function boardOf(device: Device): string {
  if (ONE_WIRE_TYPES.has(device.dev)) return ONE_WIRE_BOARD;
  // Automations belong to no board: their ids (stair_light) only look like circuits.
  if (device.dev === 'automation') return '';
  // A cover is named by the user (living_room); it sits with the board of its up output (`ro/2_01`).
  if (device.dev === 'cover' && typeof device.up === 'string') return boardOf({ dev: 'ro', circuit: device.up.slice(device.up.indexOf('/') + 1) });
  const circuit = String(device.circuit);
  const underscore = circuit.indexOf('_');
  if (underscore > 0) return circuit.slice(0, underscore);
  if (/^\d+$/.test(circuit) && device.dev !== 'run') return circuit;
  return '';
}
