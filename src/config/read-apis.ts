// Reads `apis`: HTTP listener, WebSocket, webhook, MQTT, Sparkplug and access control.
import { accessSync, constants, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { AuthConfig, AuthToken, AuthUser, Config, LimitsConfig, MqttConfig, WebhookConfig } from './types.js';
import { parsePasswordHash } from '../api/access/password-hash.js';
import { readSparkplug } from './read-sparkplug.js';
import { readModbusServer } from './read-modbus-server.js';
import type { ConfigSection } from './section.js';
import {
  DEFAULT_API_ADDRESS,
  DEFAULT_API_PORT,
  DEFAULT_HEADERS_TIMEOUT_MS,
  DEFAULT_MAX_CONNECTIONS,
  DEFAULT_MAX_CONNECTIONS_PER_ADDRESS,
  DEFAULT_MAX_WEBSOCKET_CLIENTS,
  DEFAULT_MAX_WEBSOCKET_MESSAGE_BYTES,
  DEFAULT_REQUEST_TIMEOUT_MS,
} from './defaults.js';

/** `baseDir` anchors relative file paths (TLS files, token files): the config file's directory. */
export function readApis(apis: ConfigSection, baseDir: string): Config['apis'] {
  const websocket = apis.section('websocket');
  const panel = apis.section('panel');
  const config: Config['apis'] = {
    port: apis.integer('port', DEFAULT_API_PORT, 1, 65535),
    address: apis.string('address', DEFAULT_API_ADDRESS),
    addressWritten: apis.has('address'),
    websocket: {
      enabled: websocket.boolean('enabled', false),
      allFiltered: websocket.boolean('all_filtered', false),
      errorReplies: websocket.boolean('error_replies', false),
    },
    panel: { enabled: panel.boolean('enabled', true) },
    webhook: readWebhook(apis.section('webhook')),
    mqtt: readMqtt(apis.section('mqtt'), baseDir),
    sparkplug: readSparkplug(apis.section('sparkplug'), baseDir),
    modbusServer: readModbusServer(apis.section('modbus_server')),
    auth: readAuth(apis.section('auth'), baseDir),
    limits: readLimits(apis.section('limits')),
    allowedHosts: apis.stringList('allowed_hosts', []),
  };
  if (apis.has('tls')) {
    const tls = apis.section('tls');
    const cert = readableFile(tls, 'cert', baseDir, true);
    const key = readableFile(tls, 'key', baseDir, true);
    if (tls.boolean('self_signed', false)) {
      if (cert !== undefined || key !== undefined) tls.error(tls.at, 'self_signed', 'give either self_signed: true or cert and key, not both');
      // The paths are state_dir's, filled in once state_dir is known (load.ts).
      else config.tls = { cert: '', key: '', selfSigned: true };
    } else if (cert === undefined || key === undefined) tls.error(tls.at, undefined, 'HTTPS needs both cert and key (PEM files)');
    else config.tls = { cert, key };
    tls.warnUnknownKeys();
  } else {
    apis.markKnown('tls');
  }
  websocket.warnUnknownKeys();
  panel.warnUnknownKeys();
  apis.warnUnknownKeys();
  return config;
}

function readWebhook(webhook: ConfigSection): WebhookConfig {
  const config: WebhookConfig = {
    enabled: webhook.boolean('enabled', false),
    address: webhook.string('address', 'http://127.0.0.1:80/index.html'),
    deviceMask: webhook.stringList('device_mask', ['di', 'sensor', 'watchdog']),
    complexEvents: webhook.boolean('complex_events', false),
    // Ours: complex events also carry quality, age and counter totals.
    meta: webhook.boolean('meta', false),
  };
  if (config.enabled && !isHttpUrl(config.address)) {
    webhook.error(webhook.value('address')?.origin ?? webhook.at, 'address', `expected an http:// or https:// URL, got '${config.address}'`);
  }
  webhook.warnUnknownKeys();
  return config;
}

function isHttpUrl(text: string): boolean {
  try {
    const { protocol } = new URL(text);
    return protocol === 'http:' || protocol === 'https:';
  } catch {
    return false;
  }
}

function readMqtt(mqtt: ConfigSection, baseDir: string): MqttConfig {
  const enabled = mqtt.boolean('enabled', false);
  // Broker and client id only matter (and are only demanded) when MQTT is on.
  const address = enabled ? mqtt.requiredString('address', 'the broker host name') : mqtt.string('address', '');
  const clientId = enabled ? mqtt.requiredString('client-id', 'the MQTT client id, also the default topic prefix') : mqtt.string('client-id', '');
  const topicPrefix = mqtt.string('topic_prefix', clientId);
  if (/[+#]/.test(topicPrefix)) {
    const node = mqtt.value('topic_prefix') ?? mqtt.value('client-id');
    mqtt.error(node?.origin ?? mqtt.at, 'topic_prefix', `must not contain the MQTT wildcards + or #, got '${topicPrefix}'`);
  }
  const homeassistant = mqtt.section('homeassistant');
  const config: MqttConfig = {
    enabled,
    address,
    port: mqtt.integer('port', 1883, 1, 65535),
    clientId,
    username: optionalCredential(mqtt, 'username'),
    password: optionalCredential(mqtt, 'password'),
    keepalive: mqtt.integer('keepalive', 60, 0, 65535),
    qos: mqtt.choice('qos', [0, 1, 2] as const, 0),
    retain: mqtt.boolean('retain', true),
    protocol: mqtt.choice('protocol', ['auto', 5, '3.1.1'] as const, 'auto'),
    topicPrefix,
    homeassistant: {
      enabled: homeassistant.boolean('enabled', false),
      discoveryPrefix: homeassistant.string('discovery_prefix', 'homeassistant'),
    },
  };
  // Any `tls:` mapping, even an empty one, means TLS (with the system CAs unless `ca` is given).
  if (mqtt.has('tls')) {
    const tls = mqtt.section('tls');
    config.tls = {
      ca: readableFile(tls, 'ca', baseDir, enabled),
      cert: readableFile(tls, 'cert', baseDir, enabled),
      key: readableFile(tls, 'key', baseDir, enabled),
      rejectUnauthorized: tls.boolean('reject_unauthorized', true),
    };
    tls.warnUnknownKeys();
  } else {
    mqtt.markKnown('tls');
  }
  homeassistant.warnUnknownKeys();
  mqtt.warnUnknownKeys();
  return config;
}

/** EVOK's default for username and password is "", meaning none; so an empty value is not an error here. */
export function optionalCredential(mqtt: ConfigSection, key: string): string | undefined {
  const node = mqtt.value(key);
  return node?.kind === 'scalar' && node.value === '' ? undefined : mqtt.optionalString(key);
}

/** A file path setting, resolved against the config directory and, when it will be used, checked now. */
export function readableFile(section: ConfigSection, key: string, baseDir: string, check: boolean): string | undefined {
  const given = section.optionalString(key);
  if (given === undefined) return undefined;
  const path = resolve(baseDir, given);
  if (check) {
    try {
      accessSync(path, constants.R_OK);
    } catch (error) {
      section.error(section.value(key)?.origin ?? section.at, key, `cannot read ${path}: ${(error as Error).message}`);
    }
  }
  return path;
}

function readAuth(auth: ConfigSection, baseDir: string): AuthConfig {
  const tokens: AuthToken[] = [];
  for (const entry of auth.sectionList('tokens')) {
    const token = readToken(entry, baseDir);
    if (token === undefined) continue;
    if (tokens.some((other) => other.name === token.name)) entry.error(entry.at, 'name', `duplicate token name '${token.name}'`);
    if (tokens.some((other) => other.token === token.token)) entry.error(entry.at, undefined, 'the same token is listed twice');
    tokens.push(token);
  }
  const users: AuthUser[] = [];
  for (const entry of auth.sectionList('users')) {
    const user = readUser(entry);
    if (user === undefined) continue;
    if (users.some((other) => other.name === user.name)) entry.error(entry.at, 'name', `the user name '${user.name}' is listed twice`);
    users.push(user);
  }
  const config: AuthConfig = {
    tokens,
    users,
    sessionIdleMs: auth.integer('session_idle_minutes', DEFAULT_SESSION_IDLE_MINUTES, 1, 7 * 24 * 60) * 60_000,
    sessionMaxMs: auth.integer('session_max_hours', DEFAULT_SESSION_MAX_HOURS, 1, 365 * 24) * 3_600_000,
    allowAnonymous: auth.boolean('allow_anonymous', false),
    loopbackAnonymous: auth.boolean('loopback_anonymous', true),
    allowInsecureTokens: auth.boolean('allow_insecure_tokens', false),
    // Nothing listed: reads still answer `*` while there are no tokens (see createCorsPolicy).
    corsOrigins: auth.stringList('cors_origins', []),
  };
  if (config.allowAnonymous && (tokens.length > 0 || users.length > 0)) {
    auth.warn(auth.value('allow_anonymous')?.origin ?? auth.at, 'allow_anonymous', 'anyone may read and write without a token or a login, so the tokens and users protect nothing');
  }
  auth.warnUnknownKeys();
  return config;
}

function readLimits(limits: ConfigSection): LimitsConfig {
  const config: LimitsConfig = {
    maxConnections: limits.integer('max_connections', DEFAULT_MAX_CONNECTIONS, 1, 65535),
    maxConnectionsPerAddress: limits.integer('max_connections_per_address', DEFAULT_MAX_CONNECTIONS_PER_ADDRESS, 1, 65535),
    maxWebSocketClients: limits.integer('max_websocket_clients', DEFAULT_MAX_WEBSOCKET_CLIENTS, 1, 65535),
    maxWebSocketMessageBytes: limits.integer('max_websocket_message_bytes', DEFAULT_MAX_WEBSOCKET_MESSAGE_BYTES, 64, 16 * 1024 * 1024),
    headersTimeoutMs: limits.integer('headers_timeout_ms', DEFAULT_HEADERS_TIMEOUT_MS, 100, 600_000),
    requestTimeoutMs: limits.integer('request_timeout_ms', DEFAULT_REQUEST_TIMEOUT_MS, 100, 600_000),
  };
  if (config.requestTimeoutMs < config.headersTimeoutMs) {
    const origin = limits.value('request_timeout_ms')?.origin ?? limits.at;
    limits.error(origin, 'request_timeout_ms', `must not be shorter than headers_timeout_ms (${config.headersTimeoutMs})`);
  }
  limits.warnUnknownKeys();
  return config;
}

/** Panel sessions: half an hour idle, and a working day at most before the password is asked again. */
const DEFAULT_SESSION_IDLE_MINUTES = 30;
const DEFAULT_SESSION_MAX_HOURS = 12;

function readUser(entry: ConfigSection): AuthUser | undefined {
  const name = entry.requiredString('name', 'the name typed at the panel\'s login');
  const hash = entry.requiredString('password_hash', 'the output of "iogate --hash-password"');
  // Least privilege when the scope is left out, as for tokens.
  const scope = entry.choice('scope', ['read', 'write', 'admin'] as const, 'read');
  entry.warnUnknownKeys();
  if (name === '' || hash === '') return undefined;
  if (!/^[A-Za-z0-9._@-]{1,64}$/.test(name)) {
    entry.error(entry.value('name')?.origin ?? entry.at, 'name', `'${name}' is not a usable user name: use 1 to 64 letters, digits, '.', '_', '@' or '-'`);
    return undefined;
  }
  const parsed = parsePasswordHash(hash);
  if (typeof parsed === 'string') {
    entry.error(entry.value('password_hash')?.origin ?? entry.at, 'password_hash', `the password hash of user '${name}' ${parsed}`);
    return undefined;
  }
  return { name, passwordHash: hash, scope };
}

function readToken(entry: ConfigSection, baseDir: string): AuthToken | undefined {
  const name = entry.requiredString('name', 'a label for logs');
  // Least privilege when the scope is left out.
  const scope = entry.choice('scope', ['read', 'write', 'admin'] as const, 'read');
  const inline = entry.optionalString('token');
  const file = entry.optionalString('token_file');
  entry.warnUnknownKeys();
  if ((inline === undefined) === (file === undefined)) {
    entry.error(entry.at, undefined, "give exactly one of 'token' and 'token_file'");
    return undefined;
  }
  const token = inline ?? readTokenFile(entry, resolve(baseDir, file ?? ''));
  return token === undefined ? undefined : { name, token, scope };
}

function readTokenFile(entry: ConfigSection, path: string): string | undefined {
  const origin = entry.value('token_file')?.origin ?? entry.at;
  let token: string;
  try {
    token = readFileSync(path, 'utf8').trim();
  } catch (error) {
    entry.error(origin, 'token_file', `cannot read ${path}: ${(error as Error).message}`);
    return undefined;
  }
  if (token === '') {
    entry.error(origin, 'token_file', `${path} is empty`);
    return undefined;
  }
  return token;
}
