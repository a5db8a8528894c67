import type { Device } from '../../devices/device.js';
import { counterTotalOf } from '../../devices/digital/di.js';
import type { Logger } from '../../logging/log.js';
import type { MqttSink } from './sink.js';
import type { Topics } from './topics.js';

// Mirrors every device's full JSON onto its retained event topic. Changes only
// mark a device as due; a flush sends each due device's *current* JSON. So
// while the broker is away, or slower than the changes, states coalesce per
// device: the backlog is at most one entry per device and the broker always
// ends up with the latest state.

/** Publishes handed to the socket but not yet written out; beyond this, states wait (and coalesce). */
const MAX_IN_FLIGHT = 256;

export interface StatePublisherOptions {
  sink: MqttSink;
  topics: Topics;
  qos: 0 | 1 | 2;
  retain: boolean;
  log: Logger;
}

export class StatePublisher {
  private readonly due = new Set<Device>();
  private inFlight = 0;
  /** Publishes of an earlier connection must not count against this one. */
  private connection = 0;
  private flushScheduled = false;
  private readonly warnedUnpublishable = new Set<Device>();
  /** The counter_total last handed to the broker per DI, so an unchanged total is not sent again. */
  private readonly sentTotals = new Map<Device, number>();

  constructor(private readonly options: StatePublisherOptions) {}

  /** Devices waiting to be published: bounded by the number of devices. */
  get backlog(): number {
    return this.due.size;
  }

  /** A new broker connection: every state is sent again, so the broker holds them all. */
  connected(devices: Iterable<Device>): void {
    this.connection++;
    this.inFlight = 0;
    this.sentTotals.clear();
    this.changed(devices);
  }

  changed(devices: Iterable<Device>): void {
    for (const device of devices) this.due.add(device);
    this.scheduleFlush();
  }

  private scheduleFlush(): void {
    if (this.flushScheduled || this.due.size === 0) return;
    this.flushScheduled = true;
    // Deferred so a burst of feed batches becomes one pass, and the feed listener returns at once.
    setImmediate(() => {
      this.flushScheduled = false;
      this.flush();
    });
  }

  private flush(): void {
    const { sink, topics, qos, retain } = this.options;
    for (const device of this.due) {
      if (!sink.connected || this.inFlight >= MAX_IN_FLIGHT) return;
      this.due.delete(device);
      const topic = topics.event(device);
      if (topic === undefined) {
        this.warnOnce(device);
        continue;
      }
      const connection = this.connection;
      this.inFlight++;
      // A publish lost with its connection needs no retry here: every reconnect resends all states.
      sink.publish(topic, device.json(), { qos, retain }, () => {
        if (connection !== this.connection) return;
        this.inFlight--;
        this.scheduleFlush();
      });
      this.publishTotal(device);
    }
  }

  /**
   * A DI's counter_total on its own retained topic, as a bare number: EVOK's
   * JSON on the event topic stays as it was, and meters read one value.
   */
  private publishTotal(device: Device): void {
    const total = counterTotalOf(device);
    if (typeof total !== 'number' || this.sentTotals.get(device) === total) return;
    const topic = this.options.topics.counterTotal(device);
    if (topic === undefined) return;
    this.sentTotals.set(device, total);
    this.options.sink.publish(topic, String(total), { qos: this.options.qos, retain: true });
  }

  private warnOnce(device: Device): void {
    if (this.warnedUnpublishable.has(device)) return;
    this.warnedUnpublishable.add(device);
    this.options.log.warn(`MQTT: ${device.type} '${device.circuit}' has no event topic (its circuit contains '/', '+' or '#')`);
  }
}
