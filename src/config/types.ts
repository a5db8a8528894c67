// The daemon's configuration after an EVOK config.yaml (plus autogen.yaml and
// command-line overrides) has been read, validated and given its defaults.
import type { Origin } from './yaml-tree.js';

export interface DeviceInfoConfig {
  family: string;
  model: string;
  sn: number | null;
  board_count: number;
}

export interface DeviceConfig {
  /** Key under `devices:`, as a string (`1`, `xS51`); prefix of every circuit. */
  name: string;
  model: string;
  /** Where `model` was written, `file:line: key.path`, for a message if no board has that name. */
  modelAt?: string;
  /** Where `model` was written, to report an unknown model in file order with the other problems. */
  modelOrigin?: Origin;
  slaveId: number;
  /** Hz; 0 means as fast as the bus allows. */
  scanFrequency: number;
  scanEnabled: boolean;
  /**
   * Hz at which the blocks holding digital input values are read on top of
   * the scan (not an EVOK key); 0 = off, they are read with the scan only.
   */
  inputScanFrequency: number;
  /** Per-device device_info (EVOK rules: bus has none, or the device has its own). */
  deviceInfo?: DeviceInfoConfig;
}

interface BusCommon {
  name: string;
  devices: DeviceConfig[];
  /** Bus-level device_info (one device_info named by its model). */
  deviceInfo?: DeviceInfoConfig;
  /** Per-request timeout in ms. */
  timeoutMs: number;
  /** Extra attempts after a timed-out or corrupted reply. */
  retries: number;
}

export interface TcpBusConfig extends BusCommon {
  type: 'MODBUSTCP';
  hostname: string;
  port: number;
}

export interface RtuBusConfig extends BusCommon {
  type: 'MODBUSRTU';
  port: string;
  baudrate: number;
  parity: 'N' | 'E' | 'O';
  stopbits: 1 | 2;
}

export interface SimulatorBusConfig extends BusCommon {
  type: 'SIMULATOR';
  /** Period of the simulated inputs' toggling pattern in ms; 0 = inputs stay still. */
  toggleMs: number;
}

export type BusConfig = TcpBusConfig | RtuBusConfig | SimulatorBusConfig;

/** A 1-Wire bus served by owserver (EVOK's `type: OWFS`, also written `OWBUS`). */
export interface OneWireBusConfig {
  /** The `comm_channels` key; the `owbus` circuit. */
  name: string;
  /** As written in the file, shown as the owbus `bus` field. */
  type: 'OWFS' | 'OWBUS';
  /** Where owserver listens (ours; EVOK always used 127.0.0.1:4304). */
  hostname: string;
  port: number;
  /** Deadline of one owserver request, ms. */
  timeoutMs: number;
  /** Seconds between two reads of a sensor. */
  interval: number;
  /** Seconds between two searches of the bus for sensors. */
  scanInterval: number;
  /** Circuit of the `owpower` device that `do_reset` pulses. */
  owpower?: string;
  /** Simulated devices (family codes) behind an in-process owserver instead of a real one. */
  simulate?: string[];
  deviceInfo?: DeviceInfoConfig;
}

export interface WebhookConfig {
  enabled: boolean;
  address: string;
  deviceMask: string[];
  complexEvents: boolean;
}

export interface MqttConfig {
  enabled: boolean;
  address: string;
  port: number;
  clientId: string;
  username?: string;
  password?: string;
  keepalive: number;
  qos: 0 | 1 | 2;
  retain: boolean;
  /** MQTT version: 5, 3.1.1, or 5 with a fall-back to 3.1.1 when the broker refuses it. */
  protocol: 'auto' | 5 | '3.1.1';
  topicPrefix: string;
  tls?: { ca?: string; cert?: string; key?: string; rejectUnauthorized: boolean };
  homeassistant: { enabled: boolean; discoveryPrefix: string };
}

export interface AuthToken {
  name: string;
  token: string;
  scope: 'read' | 'write';
}

export interface AuthConfig {
  tokens: AuthToken[];
  allowAnonymous: boolean;
  loopbackAnonymous: boolean;
  /**
   * Browser origins allowed by CORS, for writes from another site and for
   * WebSocket upgrades; `*` = any. Empty without tokens: reads answer `*` as
   * EVOK does, writes and upgrades from other sites are refused.
   */
  corsOrigins: string[];
}

/** Caps that keep one client (or many) from exhausting the daemon. */
export interface LimitsConfig {
  /** Open TCP connections to the HTTP/WebSocket listener. */
  maxConnections: number;
  /** Open TCP connections from one peer address. */
  maxConnectionsPerAddress: number;
  /** Open WebSocket clients, a subset of the connections. */
  maxWebSocketClients: number;
  /** Largest WebSocket message accepted from a client, in bytes. */
  maxWebSocketMessageBytes: number;
  /** Time a client gets to send a request's headers (slow-header attacks). */
  headersTimeoutMs: number;
  /** Time a client gets to send a whole request, body included. */
  requestTimeoutMs: number;
}

export interface Config {
  /** File the configuration came from, for messages; undefined = built-in default. */
  file?: string;
  logging: { level: 'CRITICAL' | 'ERROR' | 'WARNING' | 'INFO' | 'DEBUG'; file?: string };
  apis: {
    port: number;
    address: string;
    websocket: { enabled: boolean; allFiltered: boolean; errorReplies: boolean };
    /** The built-in control panel at `/`. */
    panel: { enabled: boolean };
    webhook: WebhookConfig;
    mqtt: MqttConfig;
    auth: AuthConfig;
    limits: LimitsConfig;
    /** Host names served besides this machine's own (DNS rebinding guard); `*` = any. */
    allowedHosts: string[];
  };
  buses: BusConfig[];
  oneWireBuses: OneWireBusConfig[];
  /** Directories searched for user hw-definition YAML files (EVOK v3 format). */
  hwDefinitionDirs: string[];
  /** Where aliases are stored (EVOK: /var/lib/evok/alias.yaml). */
  aliasFile: string;
}
