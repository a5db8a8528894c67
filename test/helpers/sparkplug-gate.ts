import { startMqtt, type MqttBridge } from '../../src/api/mqtt/bridge.js';
import type { EdgeNode } from '../../src/api/sparkplug/edge-node.js';
import { startSparkplug } from '../../src/api/sparkplug/start.js';
import { createLogger, type Logger } from '../../src/logging/log.js';
import { STILL_BOARD, startGate, type Gate } from './in-process.js';
import { TestBroker } from './mqtt-broker.js';
import { Observer } from './mqtt-observer.js';
import { TahuHost } from './sparkplug-host.js';

// The daemon's parts in the test process with the Sparkplug edge node on: a
// simulated Neuron `00` as device 1 whose inputs move only when the test moves
// them (in-process.ts's STILL_BOARD).

export async function startEdgeGate(
  brokerUrl: string,
  edgeNodeId: string,
  {
    write = false,
    moreServers = [],
    keepalive,
    primaryHostId,
    log = createLogger('CRITICAL'),
  }: {
    write?: boolean;
    /** walked after brokerUrl */ moreServers?: string[];
    keepalive?: number;
    /** The node births only while this host's STATE says online. */
    primaryHostId?: string;
    log?: Logger;
  } = {},
): Promise<{ gate: Gate; node: EdgeNode }> {
  const section = `apis:
  sparkplug:
    enabled: true
    group_id: plant
    edge_node_id: ${edgeNodeId}
    servers:
${[brokerUrl, ...moreServers].map((url) => `      - url: ${url}\n`).join('')}    write: ${write}
${keepalive === undefined ? '' : `    keepalive: ${keepalive}\n`}${primaryHostId === undefined ? '' : `    primary_host_id: ${primaryHostId}\n`}`;
  const gate = await startGate(STILL_BOARD.replace('apis:\n', section));
  return { gate, node: startSparkplug(gate.config, gate.runtime, log) };
}

export interface EdgeSession {
  broker: TestBroker;
  host: TahuHost;
  gate: Gate;
  node: EdgeNode;
  /** Ends the node, the gate, the host and the broker, in that order. */
  stop(): Promise<void>;
}

/**
 * A broker (aedes), a host on it that reads with Eclipse Tahu's codec (group
 * `plant`, connected first, so it sees the births), and the edge node on the
 * same broker.
 */
export async function startEdgeSession(
  edgeNodeId: string,
  options: Parameters<typeof startEdgeGate>[2] = {},
  hostOptions: Parameters<typeof TahuHost.connect>[2] = {},
): Promise<EdgeSession> {
  const broker = await TestBroker.start();
  const host = await TahuHost.connect(broker.url, 'plant', hostOptions);
  const { gate, node } = await startEdgeGate(broker.url, edgeNodeId, options);
  return {
    broker,
    host,
    gate,
    node,
    async stop() {
      await node.stop();
      await gate.close();
      await host.close();
      await broker.stop();
    },
  };
}

export interface MirrorAndEdge {
  gate: Gate;
  bridge: MqttBridge;
  node: EdgeNode;
  host: TahuHost;
  /** Subscribed to the topics asked for. */
  observer: Observer;
  /** Ends the observer, the host, the node, the bridge, the gate and the broker, in that order. */
  stop(): Promise<void>;
}

/**
 * Both broker APIs at once on one broker (aedes): the MQTT mirror as client
 * `plc1` and the edge node as `edgeNodeId` in group `plant` with writes on,
 * a Tahu-codec host, and an MQTT observer of `topics`.
 */
export async function startMirrorAndEdge(edgeNodeId: string, topics: string[]): Promise<MirrorAndEdge> {
  const broker = await TestBroker.start();
  const gate = await startGate(
    STILL_BOARD.replace(
      'apis:\n',
      `apis:
  mqtt:
    enabled: true
    address: 127.0.0.1
    port: ${broker.port}
    client-id: plc1
  sparkplug:
    enabled: true
    group_id: plant
    edge_node_id: ${edgeNodeId}
    servers:
      - url: ${broker.url}
    write: true
`,
    ),
  );
  const log = createLogger('CRITICAL');
  const bridge = startMqtt({ ...gate.runtime, config: gate.config.apis.mqtt, log });
  const node = startSparkplug(gate.config, gate.runtime, log);
  const host = await TahuHost.connect(broker.url, 'plant');
  const observer = await Observer.connect(broker.url, topics);
  return {
    gate,
    bridge,
    node,
    host,
    observer,
    async stop() {
      await observer.close();
      await host.close();
      await node.stop();
      await bridge.stop();
      await gate.close();
      await broker.stop();
    },
  };
}
