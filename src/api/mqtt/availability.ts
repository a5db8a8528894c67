import type { Device } from '../../devices/device.js';
import type { SlaveUnit } from '../../devices/slave/slave-unit.js';
import type { Logger } from '../../logging/log.js';
import { OFFLINE, ONLINE } from './connection.js';
import type { MqttSink } from './sink.js';
import type { Topics } from './topics.js';

// Retained `online`/`offline` per Modbus slave on `<prefix>/availability/<slave>`,
// so dashboards and Home Assistant grey out the I/O of a slave that stopped
// answering while the rest of the controller keeps working. The change feed
// carries a slave's `modbus_slave` device whenever it goes on- or offline.
// A slave that has not answered yet counts as offline.

type Slave = Pick<SlaveUnit, 'name' | 'state'>;

export class SlaveAvailability {
  private readonly byName: ReadonlyMap<string, Slave>;

  constructor(
    private readonly sink: MqttSink,
    private readonly topics: Topics,
    private readonly qos: 0 | 1 | 2,
    slaves: readonly Slave[],
    private readonly log: Logger,
  ) {
    this.byName = new Map(slaves.map((slave) => [slave.name, slave]));
  }

  /** On connect: the broker gets every slave's current availability. */
  publishAll(): void {
    for (const slave of this.byName.values()) this.publish(slave);
  }

  changed(devices: readonly Device[]): void {
    for (const device of devices) {
      if (device.type !== 'modbus_slave') continue;
      const slave = this.byName.get(device.circuit);
      if (slave) this.publish(slave);
    }
  }

  /** While disconnected nothing is sent: the next connect publishes the state the slave is in then. */
  private publish(slave: Slave): void {
    if (!this.sink.connected) return;
    const topic = this.topics.availability(slave.name);
    if (topic === undefined) {
      this.log.debug(`MQTT: slave '${slave.name}' has no availability topic (its name contains '/', '+' or '#')`);
      return;
    }
    // A degraded slave still answers and its values still flow: it is available.
    const available = slave.state === 'online' || slave.state === 'degraded';
    this.sink.publish(topic, available ? ONLINE : OFFLINE, { qos: this.qos, retain: true });
  }
}
