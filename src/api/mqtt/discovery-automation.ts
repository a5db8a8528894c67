import type { Device } from '../../devices/device.js';
import { VERSION } from '../../lifecycle/version.js';
import { message, safeId, type DiscoveryContext, type DiscoveryMessage } from './discovery-config.js';

// Home Assistant discovery of automations: each is a `switch` that shows and
// sets `enabled`, on one Home Assistant device "<bridge> automations". The
// command goes to the automation's command topic as `{"enabled": 1|0}`, into
// the one write path like any client's write. Available while iogate is.

export function automationDiscoveryMessages(device: Device, ctx: DiscoveryContext): DiscoveryMessage[] {
  const stateTopic = ctx.topics.event(device);
  if (stateTopic === undefined) return [];
  const payload = {
    name: device.alias ?? `Automation ${device.circuit}`,
    unique_id: `${safeId(ctx.bridgeId)}_automation_${safeId(device.circuit)}`,
    state_topic: stateTopic,
    value_template: "{{ 'ON' if value_json.enabled else 'OFF' }}",
    command_topic: ctx.topics.command(device),
    payload_on: '{"enabled": 1}',
    payload_off: '{"enabled": 0}',
    state_on: 'ON',
    state_off: 'OFF',
    availability: [{ topic: ctx.topics.status }],
    entity_category: 'config',
    icon: 'mdi:robot',
    qos: ctx.qos,
    device: {
      identifiers: [`${safeId(ctx.bridgeId)}_automations`],
      name: `${ctx.bridgeId} automations`,
      manufacturer: 'iogate',
      model: 'automations',
      sw_version: `iogate ${VERSION}`,
    },
  };
  return [message(ctx, 'switch', device, '', payload)];
}
