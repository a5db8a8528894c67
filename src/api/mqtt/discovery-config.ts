import type { BoardModel } from '../../boards/model.js';
import type { Device, DeviceState } from '../../devices/device.js';
import type { CounterMeta } from '../../config/types.js';
import { DigitalInput, counterTotalOf } from '../../devices/digital/di.js';
import { Cover } from '../../control/cover.js';
import { VERSION } from '../../lifecycle/version.js';
import type { Topics } from './topics.js';

// Home Assistant MQTT discovery: which entities a device becomes and their
// config payloads. Each Modbus slave is one Home Assistant device; its I/O
// read their state from the retained event topics (`value_template` picks a
// field of the JSON) and write through the command topics. An entity is
// available only while both iogate and its slave are online.

export interface DiscoveryContext {
  topics: Topics;
  discoveryPrefix: string;
  /** Identifies this iogate among others on the same broker (its MQTT client id). */
  bridgeId: string;
  qos: 0 | 1 | 2;
}

export interface SlaveInfo {
  name: string;
  model: BoardModel;
}

export interface DiscoveryMessage {
  topic: string;
  payload: Record<string, unknown>;
}

type Payload = Record<string, unknown>;

/** Device types that become entities; the rest (registers, watchdogs …) stay MQTT-only. 1-Wire sensors: discovery-onewire.ts. */
export const DISCOVERED_TYPES: ReadonlySet<string> = new Set(['di', 'do', 'ro', 'led', 'ai', 'ao', 'sensor', 'cover', 'automation']);

const LABELS: Readonly<Record<string, string>> = {
  di: 'Digital input',
  do: 'Digital output',
  ro: 'Relay',
  led: 'LED',
  ai: 'Analog input',
  ao: 'Analog output',
  cover: 'Cover',
};

const DEVICE_CLASS_BY_UNIT: Readonly<Record<string, string>> = { V: 'voltage', mV: 'voltage', A: 'current', mA: 'current' };

/**
 * What the control layer does with an output, as far as Home Assistant should
 * know: `cover` drives a cover (the cover entity is how to switch it).
 */
export type OutputRole = 'cover';

/**
 * `role`: a cover's relays stay discoverable (a fitter may want to see them)
 * but as configuration entities, disabled until enabled in Home Assistant, so
 * a dashboard does not show four raw switches beside the cover they move.
 */
export function discoveryMessages(device: Device, slave: SlaveInfo, ctx: DiscoveryContext, role?: OutputRole): DiscoveryMessage[] {
  const stateTopic = ctx.topics.event(device);
  const availability = ctx.topics.availability(slave.name);
  if (!DISCOVERED_TYPES.has(device.type) || stateTopic === undefined || availability === undefined) return [];
  const state = device.full();
  const name = device.alias ?? `${LABELS[device.type]} ${device.circuit}`;
  const entity = (suffix: string, fields: Payload): Payload => ({
    name,
    unique_id: `${safeId(ctx.bridgeId)}_${safeId(device.type)}_${safeId(device.circuit)}${suffix}`,
    state_topic: stateTopic,
    value_template: '{{ value_json.value }}',
    availability: [{ topic: ctx.topics.status }, { topic: availability }],
    availability_mode: 'all',
    qos: ctx.qos,
    device: deviceBlock(slave, ctx),
    ...fields,
  });
  const binary = { payload_on: '1', payload_off: '0' };

  switch (device.type) {
    case 'di': {
      const messages = [message(ctx, 'binary_sensor', device, '', entity('', binary))];
      const meta = device instanceof DigitalInput ? device.counterMeta : undefined;
      if (typeof state['counter'] === 'number') {
        const counter = entity('_counter', {
          name: `${name} counter`,
          value_template: scaled('value_json.counter', meta),
          state_class: 'total_increasing',
          ...counterUnit(meta),
        });
        messages.push(message(ctx, 'sensor', device, '_counter', counter));
      }
      const totalTopic = ctx.topics.counterTotal(device);
      if (counterTotalOf(device) !== undefined && totalTopic !== undefined) {
        const total = entity('_counter_total', {
          name: `${name} counter total`,
          state_topic: totalTopic,
          value_template: scaled('value', meta),
          state_class: 'total_increasing',
          ...counterUnit(meta),
        });
        messages.push(message(ctx, 'sensor', device, '_counter_total', total));
      }
      return messages;
    }
    case 'do':
    case 'ro':
    case 'led': {
      const coverOutput = role === 'cover' ? { entity_category: 'config', enabled_by_default: false } : {};
      return [message(ctx, 'switch', device, '', entity('', { ...binary, command_topic: ctx.topics.command(device), ...coverOutput }))];
    }
    case 'ai':
      return [message(ctx, 'sensor', device, '', entity('', { state_class: 'measurement', ...unitFields(state) }))];
    case 'ao': {
      const [min, max] = rangeOf(state) ?? [0, 10];
      const number = entity('', {
        command_topic: ctx.topics.command(device),
        command_template: '{"value": {{ value }}}',
        min,
        max,
        step: 0.001,
        mode: 'box',
        ...unitFields(state),
      });
      return [message(ctx, 'number', device, '', number)];
    }
    case 'cover':
      return [message(ctx, 'cover', device, '', entity('', coverFields(device, ctx)))];
    default:
      return [];
  }
}

/**
 * Home Assistant's MQTT cover: commands as JSON objects on the cover's
 * command topic, state, position and tilt from its event topic. `moving` is
 * up, down or stopped (HA then takes open or closed from the position);
 * while unknown (board offline, or at rest with no known position) HA is
 * sent its `None`, which it shows as unknown.
 */
function coverFields(device: Device, ctx: DiscoveryContext): Payload {
  const command = ctx.topics.command(device);
  const stateTopic = ctx.topics.event(device);
  const fields: Payload = {
    command_topic: command,
    payload_open: '{"command": "open"}',
    payload_close: '{"command": "close"}',
    payload_stop: '{"command": "stop"}',
    // At rest with no position (it was moving when iogate was killed): unknown, not "stopped", which HA would show as open.
    value_template:
      "{{ value_json.moving if value_json.moving in ('up', 'down') or (value_json.moving == 'stopped' and value_json.position is not none) else 'None' }}",
    state_opening: 'up',
    state_closing: 'down',
    state_stopped: 'stopped',
    position_topic: stateTopic,
    position_template: "{{ value_json.position if value_json.position is not none else 'None' }}",
    set_position_topic: command,
    set_position_template: '{"position": {{ position }}}',
    position_open: 100,
    position_closed: 0,
    device_class: 'shutter',
  };
  if (device instanceof Cover && device.hasTilt) {
    Object.assign(fields, {
      tilt_status_topic: stateTopic,
      tilt_status_template: "{{ value_json.tilt if value_json.tilt is not none else 'None' }}",
      tilt_command_topic: command,
      tilt_command_template: '{"tilt": {{ tilt_position }}}',
      tilt_min: 0,
      tilt_max: 100,
      tilt_opened_value: 100,
      tilt_closed_value: 0,
    });
  }
  return fields;
}

export function message(ctx: DiscoveryContext, component: string, device: Device, suffix: string, payload: Payload): DiscoveryMessage {
  const objectId = `${safeId(device.type)}_${safeId(device.circuit)}${suffix}`;
  return { topic: `${ctx.discoveryPrefix}/${component}/${safeId(ctx.bridgeId)}/${objectId}/config`, payload };
}

function deviceBlock(slave: SlaveInfo, ctx: DiscoveryContext): Payload {
  return {
    identifiers: [`${safeId(ctx.bridgeId)}_${safeId(slave.name)}`],
    name: `${ctx.bridgeId} ${slave.name}`,
    manufacturer: 'Unipi',
    model: slave.model.description ?? slave.model.name,
    sw_version: `iogate ${VERSION}`,
  };
}

/**
 * A counter's template: the pulses, or with a factor the quantity they count,
 * rounded to 9 decimals so 0.1 L per pulse does not show binary fractions.
 */
function scaled(field: string, meta: CounterMeta | undefined): string {
  if (meta === undefined || meta.factor === 1) return `{{ ${field} }}`;
  const number = field === 'value' ? '(value | float)' : field;
  return `{{ (${number} * ${meta.factor}) | round(9) }}`;
}

/** The unit (and device class) that lets Home Assistant's energy and water dashboards take a counter as it is. */
function counterUnit(meta: CounterMeta | undefined): Payload {
  if (meta === undefined) return {};
  return meta.deviceClass === undefined ? { unit_of_measurement: meta.unit } : { unit_of_measurement: meta.unit, device_class: meta.deviceClass };
}

function unitFields(state: DeviceState): Payload {
  const unit = state['unit'];
  if (typeof unit !== 'string' || unit === '') return {};
  const deviceClass = DEVICE_CLASS_BY_UNIT[unit];
  return deviceClass ? { unit_of_measurement: unit, device_class: deviceClass } : { unit_of_measurement: unit };
}

/** The active range: the device's own `range`, else the one of its current mode (Brain AO has no `range` field). */
function rangeOf(state: DeviceState): [number, number] | undefined {
  const own = asRange(state['range']);
  if (own) return own;
  const modes = state['modes'];
  const mode = state['mode'];
  if (typeof mode !== 'string' || typeof modes !== 'object' || modes === null || !Object.hasOwn(modes, mode)) return undefined;
  const active = (modes as Record<string, unknown>)[mode];
  return typeof active === 'object' && active !== null ? asRange((active as Record<string, unknown>)['range']) : undefined;
}

function asRange(value: unknown): [number, number] | undefined {
  if (!Array.isArray(value) || value.length !== 2) return undefined;
  const [min, max] = value as unknown[];
  return typeof min === 'number' && typeof max === 'number' && min < max ? [min, max] : undefined;
}

/** Home Assistant accepts only these characters in node and object ids. */
export function safeId(text: string): string {
  return text.replace(/[^A-Za-z0-9_-]/g, '_');
}
