import type { MqttClient } from 'mqtt';
import { nodeBirthMetrics, type NodeProperties } from './node-metrics.js';
import { encodePayload } from './payload-encode.js';
import type { Metric } from './payload-types.js';
import { engUnitOf, metricValue, type PointModel, type SparkplugDevice } from './point-model.js';
import type { SparkplugTopics } from './topics.js';

// What the host was told is born, and the seq every message carries. A host
// trusts a metric alias only after a birth declared it, and checks that seq
// runs 0..255 from the NBIRTH on: so NBIRTH restarts seq and forgets every
// device, each online device gets a DBIRTH with its values and units, and a
// DDEATH is sent whenever a device the host believes born goes away. The
// node (edge-node.ts) decides when to be born; this says what a birth is.

export interface MessageCounts {
  nodeBirths: number;
  deviceBirths: number;
  deviceDeaths: number;
  dataMessages: number;
}

export class Births {
  private seq = 0;
  private readonly deviceBorn = new Set<string>();

  constructor(
    private readonly topics: SparkplugTopics,
    private readonly model: PointModel,
    private readonly properties: NodeProperties,
    private readonly startedAt: number,
    private readonly counts: MessageCounts,
  ) {}

  /** The seq the next message will carry. */
  get upcomingSeq(): number {
    return this.seq;
  }

  /** The devices the host was told are born (their aliases and values are known there). */
  get bornDevices(): ReadonlySet<string> {
    return this.deviceBorn;
  }

  /** The session ended: nothing is born for the next host. */
  forget(): void {
    this.deviceBorn.clear();
  }

  private nextSeq(): number {
    const seq = this.seq;
    this.seq = (this.seq + 1) % 256;
    return seq;
  }

  publish(client: MqttClient, topic: string, metrics: Metric[], timestamp = Date.now()): void {
    client.publish(topic, Buffer.from(encodePayload({ timestamp, metrics, seq: this.nextSeq() })), { qos: 0, retain: false });
  }

  /** NBIRTH at seq 0, then a DBIRTH per online device. */
  nodeBirth(client: MqttClient, bdSeq: number): void {
    const now = Date.now();
    this.seq = 0;
    this.deviceBorn.clear();
    this.publish(client, this.topics.node('NBIRTH'), nodeBirthMetrics(bdSeq, this.properties, this.startedAt, now), now);
    this.counts.nodeBirths++;
    for (const device of this.model.devices) if (device.online()) this.deviceBirth(client, device);
  }

  deviceBirth(client: MqttClient, device: SparkplugDevice): void {
    const now = Date.now();
    const metrics: Metric[] = device.points.map((point) => {
      point.sent = metricValue(point);
      const metric: Metric = { name: point.name, alias: point.alias, datatype: point.datatype, value: point.sent, timestamp: now };
      const engUnit = engUnitOf(point);
      point.bornUnit = engUnit;
      if (engUnit !== undefined) metric.properties = { engUnit };
      return metric;
    });
    this.publish(client, this.topics.device('DBIRTH', device.id), metrics, now);
    this.deviceBorn.add(device.id);
    this.counts.deviceBirths++;
  }

  deviceDeath(client: MqttClient, device: SparkplugDevice): void {
    this.publish(client, this.topics.device('DDEATH', device.id), []);
    this.deviceBorn.delete(device.id);
    this.counts.deviceDeaths++;
  }

  /** DDEATH then DBIRTH: a birth declares every metric and its unit, so a changed set needs a fresh one. */
  reborn(client: MqttClient, device: SparkplugDevice): void {
    this.deviceDeath(client, device);
    this.deviceBirth(client, device);
  }

  /** DBIRTH or DDEATH when a device's online state no longer matches what the host was told. */
  followDevice(client: MqttClient, device: SparkplugDevice | undefined): void {
    if (!device) return;
    const online = device.online();
    const born = this.deviceBorn.has(device.id);
    if (online && !born) this.deviceBirth(client, device);
    else if (!online && born) this.deviceDeath(client, device);
  }
}
