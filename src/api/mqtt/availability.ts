import type { SlaveUnit } from '../../devices/slave-unit.js';
import type { Logger } from '../../log.js';
import { OFFLINE, ONLINE } from './connection.js';
import type { MqttSink } from './sink.js';
import type { Topics } from './topics.js';

// Retained `online`/`offline` per Modbus slave on `<prefix>/availability/<slave>`,
// so dashboards and Home Assistant grey out the I/O of a slave that stopped
// answering while the rest of the controller keeps working. A slave that has
// not answered yet counts as offline.

type Slave = Pick<SlaveUnit, 'name' | 'state'>;

export class SlaveAvailability {
  constructor(
    private readonly sink: MqttSink,
    private readonly topics: Topics,
    private readonly qos: 0 | 1 | 2,
    private readonly log: Logger,
  ) {}

  /** On connect: the broker gets every slave's current availability. */
  publishAll(slaves: Iterable<Slave>): void {
    for (const slave of slaves) this.publish(slave);
  }

  /**
   * A slave went on- or offline. While disconnected nothing is sent: the
   * next connect publishes the state the slave is in then.
   */
  publish(slave: Slave): void {
    if (!this.sink.connected) return;
    const topic = this.topics.availability(slave.name);
    if (topic === undefined) {
      this.log.debug(`MQTT: slave '${slave.name}' has no availability topic (its name contains '/', '+' or '#')`);
      return;
    }
    this.sink.publish(topic, slave.state === 'online' ? ONLINE : OFFLINE, { qos: this.qos, retain: true });
  }
}
