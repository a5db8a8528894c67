import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ADMIN_TOKEN, LOGIN_PASSWORD, LOGIN_USER, READ_TOKEN, WRITE_TOKEN } from './common.js';
import { hashPassword } from '../../src/api/access/password-hash.js';
import { MODBUS_MODEL, MODBUS_TIMEOUT_MS } from './modbus-peer.js';
import { TOPIC_PREFIX } from './mqtt-attack.js';
import { OWSERVER_TIMEOUT_MS } from './owserver-peer.js';
import { tempDir } from '../helpers/temp-dir.js';

// The daemon's configuration for a fuzz run, in a fresh directory (aliases
// included): every API on, tokens required even on loopback (so refusals are
// exercised), few connections per address (so attackers get parked and
// bridged), a simulated board for the supervising client, and the three
// hostile peers. The reload storm (reload-attack.ts) rewrites it with the
// settings below varied; the tokens, the panel user, the address and the
// port never change.

/** The panel user's hash, made once per run at a low cost (the login attack logs in often). */
const LOGIN_HASH = hashPassword(LOGIN_PASSWORD, { n: 1024 });

export interface PeerPorts {
  modbus: number;
  owserver: number;
  /** Undefined: no MQTT (and no Sparkplug) in this run. */
  mqtt: number | undefined;
  /** Where the webhook posts (reload-attack.ts's receiver); undefined: the webhook stays off. */
  webhook?: number;
}

/** What a reload may change, one knob or more per component. */
export interface ConfigVariant {
  mqttKeepalive: number;
  mqttQos: 0 | 1;
  homeassistant: boolean;
  sparkplug: boolean;
  sparkplugKeepalive: number;
  websocketErrorReplies: boolean;
  panel: boolean;
  corsOrigin: string | undefined;
  maxWebSocketClients: number;
  webhook: boolean;
  webhookComplexEvents: boolean;
  /** A second simulated bus, added and removed (the supervising client's bus SIM is never rebuilt). */
  extraSimBus: boolean;
  extraSimToggleMs: number;
  modbusTimeoutMs: number;
  oneWireIntervalS: number;
  /** An interlock on the simulated board's outputs: a reload that adds or changes it is refused whole. */
  interlock: boolean;
  /** A cover on the simulated board's outputs: the same. */
  cover: boolean;
}

/** The configuration a run starts with. */
export const BASE_VARIANT: ConfigVariant = {
  mqttKeepalive: 60,
  mqttQos: 0,
  homeassistant: true,
  sparkplug: true,
  sparkplugKeepalive: 30,
  websocketErrorReplies: false,
  panel: true,
  corsOrigin: undefined,
  maxWebSocketClients: 64,
  webhook: false,
  webhookComplexEvents: false,
  extraSimBus: false,
  extraSimToggleMs: 0,
  modbusTimeoutMs: MODBUS_TIMEOUT_MS,
  oneWireIntervalS: 1,
  interlock: false,
  cover: false,
};

export function writeConfig(ports: PeerPorts): { dir: string; file: string } {
  const dir = tempDir('iogate-fuzz-');
  const file = join(dir, 'config.yaml');
  writeFileSync(file, configText(ports, BASE_VARIANT));
  return { dir, file };
}

export function configText({ modbus, owserver, mqtt, webhook }: PeerPorts, variant: ConfigVariant): string {
  const lines = [
    'alias_file: alias.yaml',
    'apis:',
    `  websocket: {enabled: true, error_replies: ${variant.websocketErrorReplies}}`,
    `  panel: {enabled: ${variant.panel}}`,
    '  auth:',
    '    loopback_anonymous: false',
    '    tokens:',
    `      - {name: reader, token: ${READ_TOKEN}, scope: read}`,
    `      - {name: writer, token: ${WRITE_TOKEN}, scope: write}`,
    `      - {name: admin, token: ${ADMIN_TOKEN}, scope: admin}`,
    '    users:',
    `      - {name: ${LOGIN_USER}, password_hash: "${LOGIN_HASH}", scope: write}`,
    ...(variant.corsOrigin === undefined ? [] : [`    cors_origins: ["${variant.corsOrigin}"]`]),
    `  limits: {max_connections_per_address: 4, max_websocket_clients: ${variant.maxWebSocketClients}}`,
    // The Modbus TCP server on a free port; one attacker address is left off its allow list.
    '  modbus_server: {enabled: true, port: 0, allow: [127.0.0.1, 127.0.0.2, 127.0.0.3, 127.0.0.4]}',
  ];
  if (webhook !== undefined && variant.webhook) {
    lines.push('  webhook:', '    enabled: true', `    address: http://127.0.0.1:${webhook}/hook`, `    complex_events: ${variant.webhookComplexEvents}`);
  }
  if (mqtt !== undefined) {
    lines.push(
      '  mqtt:',
      '    enabled: true',
      '    address: 127.0.0.1',
      `    port: ${mqtt}`,
      `    client-id: ${TOPIC_PREFIX}`,
      `    keepalive: ${variant.mqttKeepalive}`,
      `    qos: ${variant.mqttQos}`,
      `    homeassistant: {enabled: ${variant.homeassistant}}`,
    );
    if (variant.sparkplug) {
      lines.push(
        '  sparkplug:',
        '    enabled: true',
        '    group_id: fuzz',
        '    edge_node_id: fuzz-node',
        `    keepalive: ${variant.sparkplugKeepalive}`,
        '    servers:',
        `      - url: mqtt://127.0.0.1:${mqtt}`,
      );
    }
  }
  lines.push(
    'comm_channels:',
    '  SIM:',
    '    type: SIMULATOR',
    '    toggle_ms: 200',
    '    devices:',
    "      1: {model: '00'}",
    ...(variant.extraSimBus ? ['  SIM2:', '    type: SIMULATOR', `    toggle_ms: ${variant.extraSimToggleMs}`, '    devices:', "      3: {model: '00'}"] : []),
    '  TCP:',
    '    type: MODBUSTCP',
    '    hostname: 127.0.0.1',
    `    port: ${modbus}`,
    `    timeout: ${variant.modbusTimeoutMs}`,
    '    devices:',
    `      2: {model: '${MODBUS_MODEL}', slave-id: 1}`,
    '  OW:',
    '    type: OWFS',
    '    hostname: 127.0.0.1',
    `    port: ${owserver}`,
    `    interval: ${variant.oneWireIntervalS}`,
    '    scan_interval: 2',
    `    timeout: ${OWSERVER_TIMEOUT_MS}`,
  );
  if (variant.interlock) lines.push('interlocks:', '  - outputs: [do/1_01, do/1_02]', '    dwell_ms: 50');
  if (variant.cover) lines.push('covers:', '  fuzzblind:', '    up: do/1_03', '    down: do/1_04', '    travel_up_s: 2', '    travel_down_s: 2');
  return `${lines.join('\n')}\n`;
}

/**
 * The second daemon of a run, for the TLS handshake attack: HTTPS on its own
 * port with a self-signed certificate made into its state directory, the same
 * tokens and per-address limit, and a simulated board for its supervising
 * client. Nothing else: the first daemon carries the other attacks.
 */
export function writeTlsConfig(): { dir: string; file: string; cert: string } {
  const dir = tempDir('iogate-fuzz-tls-');
  const file = join(dir, 'config.yaml');
  const lines = [
    'alias_file: alias.yaml',
    'state_dir: state',
    'apis:',
    '  tls: {self_signed: true}',
    '  auth:',
    '    loopback_anonymous: false',
    '    tokens:',
    `      - {name: reader, token: ${READ_TOKEN}, scope: read}`,
    `      - {name: admin, token: ${ADMIN_TOKEN}, scope: admin}`,
    '  limits: {max_connections_per_address: 4}',
    'comm_channels:',
    '  SIM:',
    '    type: SIMULATOR',
    '    toggle_ms: 200',
    '    devices:',
    "      1: {model: '00'}",
  ];
  writeFileSync(file, `${lines.join('\n')}\n`);
  return { dir, file, cert: join(dir, 'state', 'tls', 'self-signed-cert.pem') };
}
