import type { MqttClient } from 'mqtt';
import type { Device } from '../../devices/device.js';
import type { Logger } from '../../logging/log.js';
import type { ChangeFeed } from '../../registry/feed.js';
import type { Births } from './births.js';
import { uptimeMetric } from './node-metrics.js';
import type { Metric } from './payload-types.js';
import { engUnitOf, metricValue, type Point, type PointModel, type SparkplugDevice } from './point-model.js';
import type { BufferedChange, StoreForward } from './store-forward.js';
import type { SparkplugTopics } from './topics.js';
import type { UnconfirmedTail } from './unconfirmed.js';

// The node's DATA, by exception: each batch of the change feed becomes one
// DDATA per born device that changed, carrying only the metrics whose value
// differs from what was last sent; slaves and 1-Wire buses that go or come get
// their DDEATH or DBIRTH, a device whose metrics or units changed is born
// again, and the node's uptime goes out in NDATA. While no host hears us the
// changes go to store-and-forward instead, for the replay after the next birth
// (replay.ts). Whether the node is born, and on which connection, is the
// node's (edge-node.ts); what a birth is, births.ts's.

/** How often 1-Wire buses are checked for a lost owserver or newly found sensors. */
const ONE_WIRE_CHECK_MS = 1000;
/** Node uptime is refreshed in NDATA this often. */
const UPTIME_EVERY_MS = 60_000;

export interface DataPublisherOptions {
  feed: ChangeFeed;
  model: PointModel;
  births: Births;
  topics: SparkplugTopics;
  /** Store-and-forward, for the changes no host hears. */
  buffer: StoreForward;
  /** The changes sent and not confirmed by the broker yet (unconfirmed.ts). */
  tail: UnconfirmedTail;
  counts: { dataMessages: number };
  /** When the node started (ms, wall clock), for its uptime. */
  startedAt: number;
  log: Logger;
  /** The connection to publish on while the node is born, else undefined. */
  bornClient: () => MqttClient | undefined;
}

export class DataPublisher {
  /** The devices the host was told are born (kept by births.ts). */
  private readonly deviceBorn: ReadonlySet<string>;
  private unsubscribe: (() => void) | undefined;
  private oneWireTimer: NodeJS.Timeout | undefined;
  private uptimeTimer: NodeJS.Timeout | undefined;
  private outageLogged = false;

  constructor(private readonly options: DataPublisherOptions) {
    this.deviceBorn = options.births.bornDevices;
  }

  start(): void {
    const { feed, model } = this.options;
    this.unsubscribe = feed.subscribe((devices) => this.changed(devices), { includeSilent: true });
    // Values as they are now: a change is what differs from these.
    for (const device of model.devices) for (const point of device.points) point.sent = metricValue(point);
    this.oneWireTimer = setInterval(() => this.checkOneWire(), ONE_WIRE_CHECK_MS);
    this.oneWireTimer.unref();
    this.uptimeTimer = setInterval(() => this.publishUptime(), UPTIME_EVERY_MS);
    this.uptimeTimer.unref();
  }

  stop(): void {
    this.unsubscribe?.();
    clearInterval(this.oneWireTimer);
    clearInterval(this.uptimeTimer);
  }

  /** No host hears us from now on: changes go to the buffer (and that is logged once per outage). */
  beginOutage(): void {
    this.options.buffer.beginOutage();
    this.outageLogged = false;
  }

  /** The feed's batch: births and deaths of devices, and DDATA (or buffered changes) for changed metrics. */
  private changed(devices: readonly Device[]): void {
    const { model, births, topics, tail } = this.options;
    const now = Date.now();
    const client = this.options.bornClient();
    let perDevice: Map<SparkplugDevice, Metric[]> | undefined;
    let reborn: Set<SparkplugDevice> | undefined;
    for (const device of devices) {
      if (device.type === 'modbus_slave') {
        if (client) births.followDevice(client, model.device(device.circuit));
        continue;
      }
      const points = model.pointsOf(device);
      if (points === undefined) {
        if (device.type === 'sensor') this.checkOneWire();
        continue;
      }
      for (const point of points) {
        // An analog mode change changes the unit the birth declared: the device is born again with it.
        if (client && point.unit !== undefined && this.deviceBorn.has(point.group.id) && engUnitOf(point) !== point.bornUnit) (reborn ??= new Set()).add(point.group);
        const value = metricValue(point);
        if (sameValue(value, point.sent)) continue;
        point.sent = value;
        if (!client) {
          this.keep(point, value, now);
          continue;
        }
        // A device that is not born (offline) says nothing until its DBIRTH carries its values.
        if (!this.deviceBorn.has(point.group.id)) continue;
        tail.sent(changeOf(point, value, now));
        perDevice ??= new Map();
        let metrics = perDevice.get(point.group);
        if (!metrics) perDevice.set(point.group, (metrics = []));
        metrics.push({ alias: point.alias, datatype: point.datatype, value, timestamp: now });
      }
    }
    if (!client) return;
    for (const group of reborn ?? []) births.reborn(client, group);
    if (!perDevice) return;
    for (const [group, metrics] of perDevice) {
      // A fresh birth carried these values already.
      if (reborn?.has(group)) continue;
      births.publish(client, topics.device('DDATA', group.id), metrics, now);
      this.options.counts.dataMessages++;
    }
  }

  private keep(point: Point, value: Point['sent'], now: number): void {
    if (!this.outageLogged) {
      this.outageLogged = true;
      this.options.log.info('Sparkplug: no host hears us; changes are kept for replay after the next birth');
    }
    this.options.buffer.push(changeOf(point, value, now));
  }

  private checkOneWire(): void {
    const { model, births } = this.options;
    const client = this.options.bornClient();
    for (const bus of model.oneWireBuses) {
      const grew = model.adoptSensors(bus);
      const device = model.device(bus.name);
      if (!device) continue;
      if (grew) {
        for (const point of device.points) if (!('sent' in point)) point.sent = metricValue(point);
        // A DBIRTH declares every metric: new sensors need a fresh one.
        if (client && this.deviceBorn.has(device.id)) births.reborn(client, device);
      }
      if (client) births.followDevice(client, device);
    }
  }

  private publishUptime(): void {
    const client = this.options.bornClient();
    if (!client) return;
    const now = Date.now();
    this.options.births.publish(client, this.options.topics.node('NDATA'), [uptimeMetric(this.options.startedAt, now)], now);
    this.options.counts.dataMessages++;
  }
}

function changeOf(point: Point, value: Point['sent'], timestamp: number): BufferedChange {
  return { device: point.group.id, name: point.name, datatype: point.datatype, value: value ?? null, timestamp };
}

function sameValue(a: unknown, b: unknown): boolean {
  return a === b || (Number.isNaN(a) && Number.isNaN(b));
}
