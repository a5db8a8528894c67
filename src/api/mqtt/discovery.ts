import type { Device } from '../../devices/device.js';
import { Cover } from '../../control/cover.js';
import { DISCOVERED_TYPES, discoveryMessages, type DiscoveryContext, type DiscoveryMessage, type OutputRole, type SlaveInfo } from './discovery-config.js';
import { oneWireDiscoveryMessages } from './discovery-onewire.js';
import { automationDiscoveryMessages } from './discovery-automation.js';
import type { MqttSink } from './sink.js';

// Publishes the retained Home Assistant discovery configs: all of them on
// every connect, and again for a device whose config changed (an analog
// channel switched mode, so its unit and range changed; an alias was set).
// Value changes, by far the most frequent, are recognised cheaply and skipped.

export class DiscoveryPublisher {
  /** Per device, the fields its config depends on, as last published. */
  private readonly published = new Map<Device, string>();

  constructor(
    private readonly sink: MqttSink,
    private readonly context: DiscoveryContext,
    private readonly slaveOf: (device: Device) => SlaveInfo | undefined,
  ) {}

  /** Outputs the control layer drives for something else (a cover's relays), found in publishAll. */
  private readonly roles = new Map<Device, OutputRole>();

  publishAll(devices: Iterable<Device>): void {
    this.published.clear();
    const all = [...devices];
    this.roles.clear();
    for (const device of all) {
      if (!(device instanceof Cover)) continue;
      this.roles.set(device.up, 'cover');
      this.roles.set(device.down, 'cover');
    }
    this.changed(all);
  }

  changed(devices: Iterable<Device>): void {
    if (!this.sink.connected) return;
    for (const device of devices) {
      if (!DISCOVERED_TYPES.has(device.type)) continue;
      const messages = this.messagesFor(device);
      if (!messages) continue;
      const signature = configInputs(device);
      if (this.published.get(device) === signature) continue;
      this.published.set(device, signature);
      for (const { topic, payload } of messages()) {
        this.sink.publish(topic, JSON.stringify(payload), { qos: this.context.qos, retain: true });
      }
    }
  }

  /** 1-Wire sensors stand on their own; I/O belongs to its Modbus slave. Undefined: nothing to announce. */
  private messagesFor(device: Device): (() => DiscoveryMessage[]) | undefined {
    if (device.type === 'sensor') return () => oneWireDiscoveryMessages(device, this.context);
    if (device.type === 'automation') return () => automationDiscoveryMessages(device, this.context);
    const slave = this.slaveOf(device);
    return slave ? () => discoveryMessages(device, slave, this.context, this.roles.get(device)) : undefined;
  }
}

/** What a config is built from besides fixed facts: the name, and the analog unit and range. */
function configInputs(device: Device): string {
  const { mode, unit, range, counter, type } = device.full();
  return JSON.stringify([device.alias ?? '', mode, unit, range, typeof counter, type]);
}
