import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { READ_TOKEN, WRITE_TOKEN } from './common.js';
import { MODBUS_MODEL, MODBUS_TIMEOUT_MS } from './modbus-peer.js';
import { TOPIC_PREFIX } from './mqtt-attack.js';
import { OWSERVER_TIMEOUT_MS } from './owserver-peer.js';
import { tempDir } from '../helpers/temp-dir.js';

// The daemon's configuration for a fuzz run, in a fresh directory (aliases
// included): every API on, tokens required even on loopback (so refusals are
// exercised), few connections per address (so attackers get parked and
// bridged), a simulated board for the supervising client, and the three
// hostile peers.

export interface PeerPorts {
  modbus: number;
  owserver: number;
  /** Undefined: no MQTT in this run. */
  mqtt: number | undefined;
}

export function writeConfig({ modbus, owserver, mqtt }: PeerPorts): { dir: string; file: string } {
  const dir = tempDir('iogate-fuzz-');
  const file = join(dir, 'config.yaml');
  const lines = [
    'alias_file: alias.yaml',
    'apis:',
    '  websocket: {enabled: true}',
    '  auth:',
    '    loopback_anonymous: false',
    '    tokens:',
    `      - {name: reader, token: ${READ_TOKEN}, scope: read}`,
    `      - {name: writer, token: ${WRITE_TOKEN}, scope: write}`,
    '  limits: {max_connections_per_address: 4}',
    // The Modbus TCP server on a free port; one attacker address is left off its allow list.
    '  modbus_server: {enabled: true, port: 0, allow: [127.0.0.1, 127.0.0.2, 127.0.0.3, 127.0.0.4]}',
  ];
  if (mqtt !== undefined) {
    lines.push('  mqtt:', '    enabled: true', '    address: 127.0.0.1', `    port: ${mqtt}`, `    client-id: ${TOPIC_PREFIX}`, '    homeassistant: {enabled: true}');
  }
  lines.push(
    'comm_channels:',
    '  SIM:',
    '    type: SIMULATOR',
    '    toggle_ms: 200',
    '    devices:',
    "      1: {model: '00'}",
    '  TCP:',
    '    type: MODBUSTCP',
    '    hostname: 127.0.0.1',
    `    port: ${modbus}`,
    `    timeout: ${MODBUS_TIMEOUT_MS}`,
    '    devices:',
    `      2: {model: '${MODBUS_MODEL}', slave-id: 1}`,
    '  OW:',
    '    type: OWFS',
    '    hostname: 127.0.0.1',
    `    port: ${owserver}`,
    '    interval: 1',
    '    scan_interval: 2',
    `    timeout: ${OWSERVER_TIMEOUT_MS}`,
  );
  writeFileSync(file, `${lines.join('\n')}\n`);
  return { dir, file };
}
