// The daemon's configuration after an EVOK config.yaml (plus autogen.yaml and
// command-line overrides) has been read, validated and given its defaults.
import type { AutomationConfig, LocationConfig } from '../automations/types.js';
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
  /** DIs that keep a never-decreasing `counter_total`: all, none, or the listed circuits. */
  counterTotal: boolean | string[];
  /** What a DI's pulses count (`counters:`), by circuit: for Home Assistant's energy and water dashboards. */
  counters?: Readonly<Record<string, CounterMeta>>;
  /** Set when the device is one board of a product named as `model:` (`L203, board 2 of 3`), for the summary. */
  partOf?: string;
  /** That product (`L203`), for the `modbus_slave` device. */
  product?: string;
}

/** One DI counter's meaning: `value = pulses × factor`, in `unit`. */
export interface CounterMeta {
  unit: string;
  factor: number;
  /** Home Assistant's device class (water, gas, energy, volume); none: a plain total. */
  deviceClass?: CounterDeviceClass;
}

export const COUNTER_DEVICE_CLASSES = ['water', 'gas', 'energy', 'volume'] as const;
export type CounterDeviceClass = (typeof COUNTER_DEVICE_CLASSES)[number];

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
  /** Complex events carry the meta view (quality, ts, age_s, counter_total), as `?meta=1` does. */
  meta: boolean;
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

/** One broker an edge node may use; walked in order on failure. */
export interface SparkplugServer {
  url: string;
  username?: string;
  password?: string;
  /** TLS files (paths, resolved against the config directory). */
  ca?: string;
  cert?: string;
  key?: string;
}

export interface SparkplugConfig {
  enabled: boolean;
  groupId: string;
  /** Undefined: the device_info serial number, else the host name (see edgeNodeIdOf). */
  edgeNodeId?: string;
  servers: SparkplugServer[];
  primaryHostId?: string;
  /** Whether NCMD/DCMD may write outputs. */
  write: boolean;
  /** MQTT keep alive, s: a silent link (no close, no reset) is noticed after about 1.5 times this, by the broker (the Will) and by us. */
  keepaliveS: number;
  storeForward: { memoryMb: number; file: boolean; maxAgeS: number };
}

export interface AuthToken {
  name: string;
  token: string;
  scope: 'read' | 'write' | 'admin';
}

/** A person who logs in to the panel (`apis.auth.users`). */
export interface AuthUser {
  name: string;
  /** `scrypt$N$r$p$salt$key`, as `iogate --hash-password` prints it. */
  passwordHash: string;
  scope: 'read' | 'write' | 'admin';
}

export interface AuthConfig {
  tokens: AuthToken[];
  users: AuthUser[];
  /** A session unused this long ends. */
  sessionIdleMs: number;
  /** A session ends this long after its login, however busy. */
  sessionMaxMs: number;
  allowAnonymous: boolean;
  loopbackAnonymous: boolean;
  /** `allow_insecure_tokens`: accept tokens sent over plain HTTP from other machines (src/api/access/clear-credentials.ts). */
  allowInsecureTokens: boolean;
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

/** `interlocks:`: at most one of `outputs` on at a time. */
export interface InterlockConfig {
  /** `type/circuit` or alias, as written. */
  outputs: string[];
  /** Time after one goes off before another may go on. */
  dwellMs: number;
  /** Switch the one that is on off (and wait the dwell) instead of refusing the write. */
  switchOver: boolean;
  /** Key path in the file, for messages. */
  where: string;
}

/** `covers:`: a blind, shutter or gate driven by an up and a down output. */
export interface CoverConfig {
  name: string;
  up: string;
  down: string;
  travelUpS: number;
  travelDownS: number;
  /** Time the slats take from closed to open; undefined: no tilt. */
  tiltS?: number;
  /** How long a run to an end goes on past the estimated end, to re-sync. */
  overrunS: number;
  /** Pause between stopping and reversing. */
  dwellMs: number;
}

export interface Config {
  /** File the configuration came from, for messages; undefined = built-in default. */
  file?: string;
  logging: { level: 'CRITICAL' | 'ERROR' | 'WARNING' | 'INFO' | 'DEBUG'; file?: string };
  apis: {
    port: number;
    address: string;
    /** `address` was written in the file, not defaulted: the user chose where to listen. */
    addressWritten?: boolean;
    websocket: { enabled: boolean; allFiltered: boolean; errorReplies: boolean };
    /** The built-in control panel at `/`. */
    panel: { enabled: boolean };
    webhook: WebhookConfig;
    mqtt: MqttConfig;
    sparkplug: SparkplugConfig;
    /** The Modbus TCP server in front of the buses (docs/modbus-server.md). */
    modbusServer: ModbusServerConfig;
    auth: AuthConfig;
    limits: LimitsConfig;
    /** Host names served besides this machine's own (DNS rebinding guard); `*` = any. */
    allowedHosts: string[];
    /**
     * `apis.tls`: HTTPS and WSS on the same port, certificate and key from PEM files (absent = plain HTTP). With
     * `self_signed: true` the files are state_dir's generated pair (src/tls/self-signed-store.ts).
     */
    tls?: { cert: string; key: string; selfSigned?: boolean };
  };
  buses: BusConfig[];
  oneWireBuses: OneWireBusConfig[];
  interlocks: InterlockConfig[];
  covers: CoverConfig[];
  /** `automations:`: local rules on the write path (src/automations/). */
  automations: AutomationConfig[];
  /** `location:`: the controller's place and time zone, for schedules and sunrise/sunset. */
  location: LocationConfig;
  /** Directories searched for user hw-definition YAML files (EVOK v3 format). */
  hwDefinitionDirs: string[];
  /** Where aliases are stored (EVOK: /var/lib/evok/alias.yaml). */
  aliasFile: string;
  /** Where other state that survives a restart is kept (src/state/); default: the alias file's folder. */
  stateDir: string;
  /** `quality:` how old a value may be before it is stale, and how often counter totals are saved. */
  quality: QualityConfig;
  /** `audit:` the log of every change in state_dir; absent = the default bound, maxBytes 0 = no audit log. */
  audit?: AuditConfig;
}

export interface AuditConfig {
  /** All audit files together stay within this (`max_mb`). */
  maxBytes: number;
}

export interface ModbusServerConfig {
  enabled: boolean;
  address: string;
  port: number;
  /** Reads of polled registers are answered from the poll cache while it is at most this old. */
  maxAgeMs: number;
  /** The unit id serving iogate's own values (counter totals, covers, quality). */
  virtualUnit: number;
  /** false: every write is refused (exception 01). */
  write: boolean;
  /** Client addresses and CIDR prefixes allowed to connect; required off loopback. */
  allow: string[];
  /** Requests started per second, all clients together (request-pacer.ts); absent: its default. */
  maxRequestsPerSecond?: number;
}

export interface QualityConfig {
  /** A value is stale when older than this many of its read periods… */
  stalePeriods: number;
  /** …and never sooner than this (ms), so a 50 Hz scan does not flap on a busy line. */
  staleMinMs: number;
  /** Counter totals are saved at most this often while counters move (ms), and at shutdown. */
  counterSaveMs: number;
}
