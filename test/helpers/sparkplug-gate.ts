import type { EdgeNode } from '../../src/api/sparkplug/edge-node.js';
import { startSparkplug } from '../../src/api/sparkplug/start.js';
import { createLogger, type Logger } from '../../src/logging/log.js';
import { STILL_BOARD, startGate, type Gate } from './in-process.js';

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
