// Reads `apis.sparkplug`: the Sparkplug B edge node (off by default).
import type { ConfigSection } from './section.js';
import { hostname } from 'node:os';
import type { Config, DeviceInfoConfig, SparkplugConfig, SparkplugServer } from './types.js';
import { optionalCredential, readableFile } from './read-apis.js';

/** Sparkplug ids are UTF-8 without the topic separator and the MQTT wildcards. */
const BAD_ID = /[/+#]/;

export function readSparkplug(section: ConfigSection, baseDir: string): SparkplugConfig {
  const enabled = section.boolean('enabled', false);
  const groupId = enabled ? section.requiredString('group_id', 'the Sparkplug group id') : section.string('group_id', '');
  const edgeNodeId = section.optionalString('edge_node_id');
  const primaryHostId = section.optionalString('primary_host_id');
  for (const [key, id] of [
    ['group_id', groupId],
    ['edge_node_id', edgeNodeId],
    ['primary_host_id', primaryHostId],
  ] as const) {
    if (id !== undefined && (BAD_ID.test(id) || (key !== 'group_id' && id === ''))) {
      section.error(section.value(key)?.origin ?? section.at, key, `must be non-empty and contain none of / + #, got '${id}'`);
    }
  }
  const servers = section.sectionList('servers').map((entry) => readServer(entry, baseDir, enabled));
  if (enabled && servers.length === 0) section.error(section.at, 'servers', 'give at least one server (- url: mqtt://host:1883)');
  const storeForward = section.section('store_forward');
  const config: SparkplugConfig = {
    enabled,
    groupId,
    servers,
    write: section.boolean('write', false),
    keepaliveS: section.integer('keepalive', 30, 1, 65535),
    storeForward: {
      memoryMb: storeForward.number('memory_mb', 8, 0),
      file: storeForward.boolean('file', false),
      maxAgeS: storeForward.integer('max_age_s', 86_400, 1, 365 * 86_400),
    },
  };
  if (edgeNodeId !== undefined) config.edgeNodeId = edgeNodeId;
  if (primaryHostId !== undefined) config.primaryHostId = primaryHostId;
  storeForward.warnUnknownKeys();
  section.warnUnknownKeys();
  return config;
}

function readServer(entry: ConfigSection, baseDir: string, check: boolean): SparkplugServer {
  const url = entry.requiredString('url', 'the broker URL, mqtt://host:port or mqtts://host:port');
  let protocol = '';
  try {
    protocol = new URL(url).protocol;
  } catch {
    // reported below
  }
  if (!['mqtt:', 'mqtts:', 'tcp:', 'ssl:', 'tls:'].includes(protocol)) {
    entry.error(entry.value('url')?.origin ?? entry.at, 'url', `expected mqtt://host:port or mqtts://host:port, got '${url}'`);
  }
  const server: SparkplugServer = { url };
  const username = optionalCredential(entry, 'username');
  const password = optionalCredential(entry, 'password');
  if (username !== undefined) server.username = username;
  if (password !== undefined) server.password = password;
  for (const key of ['ca', 'cert', 'key'] as const) {
    const path = readableFile(entry, key, baseDir, check);
    if (path !== undefined) server[key] = path;
  }
  entry.warnUnknownKeys();
  return server;
}

/** The configured id, else the controller's serial number, else the host name (made a valid Sparkplug id). */
export function edgeNodeIdOf(config: Config): string {
  const given = config.apis.sparkplug.edgeNodeId;
  if (given !== undefined) return given;
  const sn = firstDeviceInfo(config)?.sn;
  const id = sn !== null && sn !== undefined ? String(sn) : hostname();
  return id.replace(/[/+#]/g, '_') || 'iogate';
}

export function firstDeviceInfo(config: Config): DeviceInfoConfig | undefined {
  for (const bus of config.buses) {
    if (bus.deviceInfo) return bus.deviceInfo;
    for (const device of bus.devices) if (device.deviceInfo) return device.deviceInfo;
  }
  return config.oneWireBuses.find((bus) => bus.deviceInfo)?.deviceInfo;
}
