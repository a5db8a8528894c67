import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { edgeNodeIdOf, firstDeviceInfo } from '../../config/read-sparkplug.js';
import type { Config } from '../../config/types.js';
import type { Logger } from '../../logging/log.js';
import type { Runtime } from '../../runtime/runtime.js';
import { VERSION_TEXT } from '../../lifecycle/version.js';
import { EdgeNode } from './edge-node.js';

// Builds the edge node from the configuration and the runtime. main.ts loads
// this module only when `apis.sparkplug.enabled` is set.

export function startSparkplug(config: Config, runtime: Pick<Runtime, 'registry' | 'feed' | 'slaves' | 'oneWire'>, log: Logger): EdgeNode {
  const info = firstDeviceInfo(config);
  const node = new EdgeNode({
    config: config.apis.sparkplug,
    edgeNodeId: edgeNodeIdOf(config),
    registry: runtime.registry,
    feed: runtime.feed,
    slaves: runtime.slaves,
    oneWire: runtime.oneWire,
    automations: runtime.registry.list('automation'),
    stateDir: config.stateDir,
    properties: {
      version: VERSION_TEXT,
      model: info?.model ?? 'unknown',
      serial: info?.sn === null || info?.sn === undefined ? 'unknown' : String(info.sn),
      configHash: configHash(config),
    },
    log,
  });
  node.start();
  log.info(`Sparkplug: edge node ${config.apis.sparkplug.groupId}/${node.topics.edgeNodeId} with ${node.model.devices.length} devices and ${node.model.pointCount} metrics`);
  return node;
}

/** Short hash of the configuration file (or of the built-in one), so a fleet view can tell which controllers differ. */
function configHash(config: Config): string {
  let text: string;
  try {
    text = config.file === undefined ? 'built-in' : readFileSync(config.file, 'utf8');
  } catch {
    text = JSON.stringify({ buses: config.buses, oneWire: config.oneWireBuses });
  }
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}
