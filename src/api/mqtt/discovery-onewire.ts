import type { Device } from '../../devices/device.js';
import { VERSION } from '../../lifecycle/version.js';
import { message, safeId, type DiscoveryContext, type DiscoveryMessage } from './discovery-config.js';

// Home Assistant discovery of 1-Wire sensors: a thermometer is one
// temperature entity, a DS2438 a temperature and a humidity entity, each
// sensor its own Home Assistant device. An entity is available while iogate
// is online and the sensor is not `lost` (read from its own state message).
// PIO chips are not announced: what their pins mean is wiring, not chip.

type Payload = Record<string, unknown>;

const NOT_LOST = "{{ 'offline' if value_json.lost else 'online' }}";

export function oneWireDiscoveryMessages(device: Device, ctx: DiscoveryContext): DiscoveryMessage[] {
  const stateTopic = ctx.topics.event(device);
  if (stateTopic === undefined) return [];
  const state = device.full();
  const chip = typeof state['type'] === 'string' ? state['type'] : '1-Wire';
  const label = device.alias ?? `${chip} ${device.circuit}`;
  const entity = (suffix: string, name: string, field: string, fields: Payload): Payload => ({
    name,
    unique_id: `${safeId(ctx.bridgeId)}_sensor_${safeId(device.circuit)}${suffix}`,
    state_topic: stateTopic,
    value_template: `{{ value_json.${field} }}`,
    availability: [{ topic: ctx.topics.status }, { topic: stateTopic, value_template: NOT_LOST }],
    availability_mode: 'all',
    state_class: 'measurement',
    qos: ctx.qos,
    device: {
      identifiers: [`${safeId(ctx.bridgeId)}_1w_${safeId(device.circuit)}`],
      name: `${ctx.bridgeId} ${label}`,
      model: chip,
      sw_version: `iogate ${VERSION}`,
    },
    ...fields,
  });
  const temperature = { device_class: 'temperature', unit_of_measurement: '°C' };
  switch (state['dev']) {
    case 'temp':
      return [message(ctx, 'sensor', device, '', entity('', label, 'value', temperature))];
    case '1wdevice':
      if (chip !== 'DS2438') return [];
      return [
        message(ctx, 'sensor', device, '_temp', entity('_temp', `${label} temperature`, 'temp', temperature)),
        message(ctx, 'sensor', device, '_humidity', entity('_humidity', `${label} humidity`, 'humidity', { device_class: 'humidity', unit_of_measurement: '%' })),
      ];
    default:
      return [];
  }
}
