import { connectAsync, type MqttClient } from 'mqtt';
import sparkplug from 'sparkplug-payload';

// A test Sparkplug primary host built on Eclipse Tahu's own codec, so no
// assertion reads an edge node's payload with the edge node's decoder. It
// records every Sparkplug message of a group as the wire carried it (topic,
// QoS, retain, decoded payload), publishes STATE and encodes commands. Any
// edge node (iogate, Tahu's own client) is read by the same code.

const tahu = sparkplug.get('spBv1.0')!;

export interface HostMetric {
  name?: string;
  alias?: number;
  type?: string;
  value: unknown;
  timestamp?: number;
  isHistorical?: boolean;
  /** Property values by key (e.g. engUnit). */
  properties?: Record<string, unknown>;
}

export interface HostMessage {
  topic: string;
  type: string;
  edgeNode: string;
  device?: string;
  qos: number;
  retain: boolean;
  timestamp?: number;
  seq?: number;
  metrics: HostMetric[];
  /** Arrival order across all messages. */
  index: number;
  /** When it arrived (ms, wall clock). */
  receivedAt: number;
}

export type CommandMetric = { name?: string; alias?: number; type: string; value: unknown };

/** Tahu's Long values as plain numbers. */
function plain(value: unknown): unknown {
  if (typeof value === 'object' && value !== null && 'toNumber' in value && typeof (value as { toNumber: unknown }).toNumber === 'function') {
    return (value as { toNumber(): number }).toNumber();
  }
  return value;
}

export class TahuHost {
  readonly messages: HostMessage[] = [];
  private readonly waiters = new Set<() => void>();
  private counter = 0;
  /** Payloads Tahu could not decode (would be a defect of the sender). */
  readonly undecodable: string[] = [];

  private constructor(
    readonly client: MqttClient,
    readonly groupId: string,
    readonly hostId: string | undefined,
  ) {
    client.on('message', (topic, payload, packet) => {
      const levels = topic.split('/');
      if (levels[0] !== 'spBv1.0' || levels[1] === 'STATE') return;
      let decoded;
      try {
        decoded = tahu.decodePayload(payload);
      } catch (error) {
        this.undecodable.push(`${topic}: ${(error as Error).message}`);
        return;
      }
      const message: HostMessage = {
        topic,
        type: levels[2]!,
        edgeNode: levels[3]!,
        qos: packet.qos,
        retain: packet.retain,
        metrics: (decoded.metrics ?? []).map((metric) => {
          const item: HostMetric = { value: plain(metric.value) };
          if (metric.name !== undefined && metric.name !== null) item.name = metric.name;
          if (metric.alias !== undefined && metric.alias !== null) item.alias = plain(metric.alias) as number;
          if (metric.type !== undefined) item.type = metric.type;
          if (metric.timestamp !== undefined && metric.timestamp !== null) item.timestamp = plain(metric.timestamp) as number;
          if (metric.isHistorical) item.isHistorical = true;
          if (metric.properties) item.properties = Object.fromEntries(Object.entries(metric.properties).map(([key, property]) => [key, plain(property.value)]));
          return item;
        }),
        index: this.counter++,
        receivedAt: Date.now(),
      };
      if (levels[4] !== undefined) message.device = levels[4];
      if (decoded.timestamp !== undefined && decoded.timestamp !== null) message.timestamp = plain(decoded.timestamp) as number;
      if (decoded.seq !== undefined && decoded.seq !== null) message.seq = plain(decoded.seq) as number;
      this.messages.push(message);
      for (const wake of this.waiters) wake();
    });
  }

  /**
   * Connects to `url` and subscribes to the group. With a `hostId` the host
   * publishes its retained STATE online (timestamp now) first, as a primary host does.
   */
  static async connect(url: string, groupId: string, { hostId, online = true }: { hostId?: string; online?: boolean } = {}): Promise<TahuHost> {
    const options: Parameters<typeof connectAsync>[1] = { reconnectPeriod: 0, clean: true, clientId: `host-${Math.random().toString(16).slice(2)}` };
    if (hostId !== undefined) {
      options.will = { topic: `spBv1.0/STATE/${hostId}`, payload: Buffer.from(JSON.stringify({ online: false, timestamp: Date.now() })), qos: 1, retain: true };
    }
    const client = await connectAsync(url, options);
    client.on('error', () => undefined);
    const host = new TahuHost(client, groupId, hostId);
    await client.subscribeAsync(`spBv1.0/${groupId}/#`, { qos: 1 });
    if (hostId !== undefined) await host.publishState(online);
    return host;
  }

  async publishState(online: boolean, timestamp = Date.now()): Promise<void> {
    if (this.hostId === undefined) throw new Error('this host has no host id');
    await this.client.publishAsync(`spBv1.0/STATE/${this.hostId}`, JSON.stringify({ online, timestamp }), { qos: 1, retain: true });
  }

  /** Messages of one edge node (and optionally one type and device). */
  of(edgeNode: string, type?: string, device?: string): HostMessage[] {
    return this.messages.filter((m) => m.edgeNode === edgeNode && (type === undefined || m.type === type) && (device === undefined || m.device === device));
  }

  /** The first message (already received or arriving later) satisfying `accept`. */
  waitFor(accept: (message: HostMessage) => boolean, timeoutMs = 10_000, what = 'a matching message'): Promise<HostMessage> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const found = this.messages.find(accept);
        if (!found) return;
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve(found);
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        const seen = this.messages.slice(-12).map((m) => `${m.topic} seq=${m.seq}`);
        reject(new Error(`no ${what} within ${timeoutMs} ms; last seen: ${JSON.stringify(seen)}`));
      }, timeoutMs);
      this.waiters.add(check);
      check();
    });
  }

  /** Waits until `count` messages satisfy `accept`. */
  async waitForCount(accept: (message: HostMessage) => boolean, count: number, timeoutMs = 10_000, what = 'messages'): Promise<HostMessage[]> {
    await new Promise<void>((resolve, reject) => {
      const check = () => {
        if (this.messages.filter(accept).length < count) return;
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve();
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(new Error(`only ${this.messages.filter(accept).length} of ${count} ${what} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiters.add(check);
      check();
    });
    return this.messages.filter(accept);
  }

  /** The name → alias table of a device, from its latest DBIRTH. */
  aliases(edgeNode: string, device: string): Map<string, number> {
    const births = this.of(edgeNode, 'DBIRTH', device);
    const birth = births[births.length - 1];
    if (!birth) throw new Error(`no DBIRTH of ${edgeNode}/${device}`);
    return new Map(birth.metrics.filter((m) => m.name !== undefined && m.alias !== undefined).map((m) => [m.name!, m.alias!]));
  }

  /**
   * Seq gaps in an edge node's messages after `from`: each birth resets to 0,
   * every following NDATA/DDATA/DBIRTH/DDEATH must be the previous + 1 (mod 256).
   */
  seqGaps(edgeNode: string, from = 0): string[] {
    const gaps: string[] = [];
    let expected: number | undefined;
    const sent = this.of(edgeNode).filter((message) => message.index >= from && !message.type.endsWith('CMD'));
    for (const m of sent) {
      if (m.type === 'NDEATH') {
        expected = undefined;
        continue;
      }
      if (m.type === 'NBIRTH') {
        if (m.seq !== 0) gaps.push(`NBIRTH with seq ${m.seq}`);
        expected = 1;
        continue;
      }
      if (expected !== undefined && m.seq !== expected) gaps.push(`${m.topic}: seq ${m.seq}, expected ${expected}`);
      expected = ((m.seq ?? 0) + 1) % 256;
    }
    return gaps;
  }

  /** `retain`: left on the broker, as a careless client might (a node must never carry it out). */
  async command(edgeNode: string, device: string | undefined, metrics: CommandMetric[], { raw, retain = false }: { raw?: Uint8Array; retain?: boolean } = {}): Promise<void> {
    const topic = device === undefined ? `spBv1.0/${this.groupId}/NCMD/${edgeNode}` : `spBv1.0/${this.groupId}/DCMD/${edgeNode}/${device}`;
    const payload = raw ?? tahu.encodePayload({ timestamp: Date.now(), metrics: metrics as never });
    await this.client.publishAsync(topic, Buffer.from(payload), retain ? { qos: 1, retain } : { qos: 0 });
  }

  rebirth(edgeNode: string): Promise<void> {
    return this.command(edgeNode, undefined, [{ name: 'Node Control/Rebirth', type: 'Boolean', value: true }]);
  }

  async close(): Promise<void> {
    await this.client.endAsync(true);
  }
}
