import { TahuHost, type HostMessage, type HostMetric } from '../helpers/sparkplug-host.js';

// The primary host of a fleet: one Tahu-codec host (test/helpers/sparkplug-host.ts)
// per broker, each publishing the host's STATE there, so an edge node born
// on any of the brokers is seen. It answers from the merged history: which
// broker a node is born on, its births and deaths with bdSeq pairing, and
// every value a device's metric took.

export interface FleetMessage extends HostMessage {
  /** Index of the broker it came through. */
  broker: number;
}

export interface MetricSample {
  value: unknown;
  timestamp: number;
  historical: boolean;
  type: string;
}

const bdSeqOf = (message: HostMessage): number | undefined => message.metrics.find((m) => m.name === 'bdSeq')?.value as number | undefined;

export class FleetHost {
  private constructor(
    readonly hosts: TahuHost[],
    readonly groupId: string,
    readonly hostId: string,
  ) {}

  static async connect(urls: string[], groupId: string, hostId: string): Promise<FleetHost> {
    const hosts: TahuHost[] = [];
    try {
      for (const url of urls) hosts.push(await TahuHost.connect(url, groupId, { hostId }));
    } catch (error) {
      await Promise.all(hosts.map((host) => host.close()));
      throw error;
    }
    return new FleetHost(hosts, groupId, hostId);
  }

  /** Every message (of one edge node) from all brokers, in arrival order. */
  messages(node?: string): FleetMessage[] {
    return this.hosts
      .flatMap((host, broker) => host.messages.filter((message) => node === undefined || message.edgeNode === node).map((message) => ({ ...message, broker })))
      .sort((a, b) => a.receivedAt - b.receivedAt || a.broker - b.broker || a.index - b.index);
  }

  count(accept: (message: HostMessage) => boolean): number {
    let n = 0;
    for (const host of this.hosts) for (const message of host.messages) if (accept(message)) n++;
    return n;
  }

  /** Edge nodes for which `accept` holds of at least one message. */
  nodesWith(accept: (message: HostMessage) => boolean): Set<string> {
    const nodes = new Set<string>();
    for (const host of this.hosts) for (const message of host.messages) if (accept(message)) nodes.add(message.edgeNode);
    return nodes;
  }

  /** Waits (bounded) until `nodes` all have a message `accept` holds of; returns when the last one arrived. */
  async waitForNodes(nodes: readonly string[], accept: (message: HostMessage) => boolean, limitMs: number, what: string): Promise<number> {
    const deadline = Date.now() + limitMs;
    for (;;) {
      const seen = this.nodesWith(accept);
      const missing = nodes.filter((node) => !seen.has(node));
      if (missing.length === 0) break;
      if (Date.now() > deadline) throw new Error(`${what}: ${missing.length} of ${nodes.length} nodes missing after ${limitMs} ms (${missing.slice(0, 8).join(', ')}…)`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    let last = 0;
    for (const node of nodes) last = Math.max(last, this.messages(node).find(accept)!.receivedAt);
    return last;
  }

  /**
   * The host's view of a node now: born (with its bdSeq and broker) or dead.
   * An NDEATH kills only the birth whose bdSeq it carries (a late Will of an
   * older session does not), as the spec asks of a host.
   */
  nodeState(node: string): { online: boolean; bdSeq?: number; broker?: number } {
    let state: { online: boolean; bdSeq?: number; broker?: number } = { online: false };
    for (const message of this.messages(node)) {
      if (message.type === 'NBIRTH') state = { online: true, bdSeq: bdSeqOf(message), broker: message.broker };
      if (message.type === 'NDEATH' && state.online && bdSeqOf(message) === state.bdSeq) state = { online: false, bdSeq: state.bdSeq };
    }
    return state;
  }

  /** bdSeq of every NDEATH that names no birth of the node (a pairing defect). */
  unpairedDeaths(node: string): number[] {
    const born = new Set<number | undefined>();
    const unpaired: number[] = [];
    for (const message of this.messages(node)) {
      if (message.type === 'NBIRTH') born.add(bdSeqOf(message));
      if (message.type === 'NDEATH' && !born.has(bdSeqOf(message))) unpaired.push(bdSeqOf(message)!);
    }
    return unpaired;
  }

  /**
   * The history of one metric of a device: every value from DBIRTH and DDATA,
   * with DDATA metrics (sent by alias) resolved through the DBIRTH before them.
   */
  history(node: string, device: string, name: string): MetricSample[] {
    const samples: MetricSample[] = [];
    let alias: number | undefined;
    for (const message of this.messages(node)) {
      if (message.device !== device) continue;
      if (message.type === 'DBIRTH') {
        const metric = message.metrics.find((m) => m.name === name);
        alias = metric?.alias;
        if (metric) samples.push(sample(metric, 'DBIRTH', message));
      } else if (message.type === 'DDATA' && alias !== undefined) {
        for (const metric of message.metrics) if (metric.alias === alias || metric.name === name) samples.push(sample(metric, 'DDATA', message));
      }
    }
    return samples;
  }

  /** Seq gaps of every node (test/helpers/sparkplug-host.ts's rule), per broker connection. */
  seqGaps(node: string): string[] {
    return this.hosts.flatMap((host) => host.seqGaps(node));
  }

  rebirth(node: string, broker: number): Promise<void> {
    return this.hosts[broker]!.rebirth(node);
  }

  async publishState(online: boolean, timestamp = Date.now()): Promise<void> {
    await Promise.all(this.hosts.map((host) => (host.client.connected ? host.publishState(online, timestamp) : undefined)));
  }

  async close(): Promise<void> {
    await Promise.all(this.hosts.map((host) => host.close().catch(() => undefined)));
  }
}

function sample(metric: HostMetric, type: string, message: HostMessage): MetricSample {
  return { value: metric.value, timestamp: metric.timestamp ?? message.timestamp ?? message.receivedAt, historical: metric.isHistorical === true, type };
}
