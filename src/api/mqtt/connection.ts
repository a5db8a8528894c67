import { readFileSync } from 'node:fs';
import type { Duplex } from 'node:stream';
import { connect, type IClientOptions, type MqttClient } from 'mqtt';
import type { MqttConfig } from '../../config/types.js';
import type { Logger } from '../../logging/log.js';
import { closeClient } from './close-client.js';
import { type ConnectFailureCounts, type ConnectFailureReason, connectFailureReason, countFailure, describeConnectFailure } from './connect-failure.js';
import { MAX_COMMAND_BYTES } from './command-payload.js';
import { PacketSizeGuard, guardIncoming } from './size-guard.js';
import type { Topics } from './topics.js';

// The broker connection: every `apis.mqtt` setting turned into mqtt.js
// options, the Last Will, and reconnection with a growing delay so a dead
// broker costs little. mqtt.js's own offline queue is switched off: the state
// publisher keeps the latest state per device instead, which stays bounded.
//
// MQTT 5 is spoken unless configured otherwise, for two things 3.1.1 lacks:
// the Maximum Packet Size we announce in CONNECT, past which the broker drops
// publishes to us instead of sending them, and Retain As Published, which
// keeps the retain flag on commands delivered live, so retained commands can
// be refused however they arrive. A broker that refuses MQTT 5 is spoken to
// in 3.1.1 from then on (`protocol: auto`). Either way, incoming packets pass
// a size guard before mqtt.js buffers them (size-guard.ts).

export const ONLINE = 'online';
export const OFFLINE = 'offline';

/** First reconnect delay; doubled after each failed attempt up to the cap. */
const FIRST_RECONNECT_MS = 500;
const MAX_RECONNECT_MS = 30_000;
const CONNECT_TIMEOUT_MS = 10_000;
/** The largest packet we take: a command at its size limit, with room for a long topic and MQTT 5 properties. */
export const MAX_INCOMING_PACKET_BYTES = MAX_COMMAND_BYTES + 4096;
/**
 * A dropped publish still arrives as reads of 64 KiB, each in a buffer that
 * only a collection frees, and the few small objects they come with trigger
 * none: a 50 MB publish left 30 MB of them waiting. With node's gc() exposed
 * (the service unit does) a young-generation collection runs after every
 * this many dropped bytes.
 */
const COLLECT_EVERY_DROPPED_BYTES = 4 * 1024 * 1024;
/** CONNACK codes of a broker that does not speak the version asked for: 3.1.1's and MQTT 5's. */
const UNSUPPORTED_VERSION = new Set([1, 132]);

/** The broker connection, with what the protocol version in use allows. */
export interface BrokerLink {
  client: MqttClient;
  /** Whether the connection is MQTT 5 (so retained commands arrive flagged even when live). */
  readonly mqtt5: boolean;
  /**
   * Ends the client for good, listeners and reconnection included (see
   * close-client.ts): a DISCONNECT after what was written when connected,
   * otherwise the socket closed. Bounded.
   */
  close(): Promise<void>;
  /** For /metrics: whether connected, and why connecting failed so far. */
  stats(): MqttLinkStats;
  /** Counts a failure seen outside the connection itself (a subscription the broker denied). */
  note(reason: ConnectFailureReason): void;
}

export interface MqttLinkStats {
  connected: boolean;
  failures: ConnectFailureCounts;
}

export function connectBroker(config: MqttConfig, topics: Topics, log: Logger): BrokerLink {
  // Connected by hand below, once the stream builder is wrapped.
  const client = connect({ ...clientOptions(config, topics), manualConnect: true });
  const where = `${config.tls ? 'mqtts' : 'mqtt'}://${config.address}:${config.port}`;
  let failures = 0;
  let dropped = 0;
  let skippedSinceCollection = 0;
  let closed = false;
  const failureCounts: ConnectFailureCounts = {};
  let lastReason: ConnectFailureReason | undefined;
  let refusedRetry: NodeJS.Timeout | undefined;
  const gc = (globalThis as { gc?: (options?: { type: 'minor' }) => void }).gc;
  const skipped = (bytes: number): void => {
    skippedSinceCollection += bytes;
    if (skippedSinceCollection < COLLECT_EVERY_DROPPED_BYTES) return;
    skippedSinceCollection = 0;
    gc?.({ type: 'minor' });
  };
  const internals = client as unknown as { streamBuilder: (client: MqttClient) => Duplex };
  const build = internals.streamBuilder;
  internals.streamBuilder = (self) =>
    guardIncoming(build(self), () => new PacketSizeGuard(MAX_INCOMING_PACKET_BYTES, () => client.options.protocolVersion ?? 4, (bytes) => {
      // One line per publish would let a publisher fill the log.
      if (dropped++ % 100 === 0) log.warn(`MQTT: a publish of ${bytes} bytes exceeds ${MAX_INCOMING_PACKET_BYTES} and was dropped unread (${dropped} so far)`);
    }, skipped));

  client.on('connect', () => {
    failures = 0;
    lastReason = undefined;
    client.options.reconnectPeriod = FIRST_RECONNECT_MS;
    log.info(`MQTT: connected to ${where} as ${config.clientId}`);
  });
  // mqtt.js schedules the next attempt from options.reconnectPeriod when the
  // connection closes, so raising it here spaces out the following attempts.
  client.on('reconnect', () => {
    client.options.reconnectPeriod = Math.min((client.options.reconnectPeriod ?? FIRST_RECONNECT_MS) * 2, MAX_RECONNECT_MS);
  });
  client.on('offline', () => log.warn(`MQTT: lost ${where}; reconnecting with back-off up to ${MAX_RECONNECT_MS / 1000} s`));
  // Without a listener an 'error' event would end the process. A broker that
  // stays away would log every attempt, so only the first failure in a row is a warning.
  client.on('error', (error) => {
    const code = (error as { code?: unknown }).code;
    if (config.protocol === 'auto' && client.options.protocolVersion === 5 && typeof code === 'number' && UNSUPPORTED_VERSION.has(code)) {
      log.warn(`MQTT: ${where} does not speak MQTT 5; using 3.1.1, where retained commands that arrive live cannot be told apart (see the docs)`);
      client.options.protocolVersion = 4;
      delete client.options.properties;
      // mqtt.js schedules no retry after a refused CONNACK; a client closed meanwhile stays closed.
      setImmediate(() => {
        if (!closed) client.reconnect();
      });
      return;
    }
    failures++;
    const reason = connectFailureReason(error);
    countFailure(failureCounts, reason);
    const next = Math.round((client.options.reconnectPeriod ?? FIRST_RECONNECT_MS) / 100) / 10;
    const message = `MQTT: ${where}: ${describeConnectFailure(reason, error)}; retrying in ${next} s, then less and less often`;
    // The first failure in a row, and every change of cause, is a warning; repeats of the same are DEBUG.
    if (failures === 1 || reason !== lastReason) log.warn(message);
    else log.debug(message);
    lastReason = reason;
    // A refused CONNACK (a login or certificate identity the broker does not accept) gets no retry
    // from mqtt.js: retry here with the same back-off, so fixing the broker's side is picked up.
    if (typeof code === 'number') {
      clearTimeout(refusedRetry);
      // The 'reconnect' listener above doubles the period for the attempt after this one.
      const delay = client.options.reconnectPeriod ?? FIRST_RECONNECT_MS;
      refusedRetry = setTimeout(() => {
        if (!closed && !client.connected) client.reconnect();
      }, delay);
    }
  });
  if (config.tls && !config.tls.rejectUnauthorized) log.warn(`MQTT: tls.reject_unauthorized is false: the broker's certificate and name are not checked, so anyone on the path can pose as ${config.address} (insecure)`);
  client.connect();
  return {
    client,
    get mqtt5() {
      return client.options.protocolVersion === 5;
    },
    note(reason) {
      countFailure(failureCounts, reason);
    },
    stats() {
      return { connected: client.connected, failures: { ...failureCounts } };
    },
    close() {
      closed = true;
      clearTimeout(refusedRetry);
      return closeClient(client, { graceful: true });
    },
  };
}

function clientOptions(config: MqttConfig, topics: Topics): IClientOptions {
  const options: IClientOptions = {
    host: config.address,
    port: config.port,
    protocol: config.tls ? 'mqtts' : 'mqtt',
    clientId: config.clientId,
    keepalive: config.keepalive,
    clean: true,
    reconnectPeriod: FIRST_RECONNECT_MS,
    connectTimeout: CONNECT_TIMEOUT_MS,
    queueQoSZero: false,
    // Subscriptions are renewed by the command handler on every connect.
    resubscribe: false,
    will: { topic: topics.status, payload: Buffer.from(OFFLINE), qos: config.qos, retain: true },
  };
  if (config.protocol === '3.1.1') options.protocolVersion = 4;
  else {
    options.protocolVersion = 5;
    options.properties = { maximumPacketSize: MAX_INCOMING_PACKET_BYTES };
  }
  if (config.username !== undefined) options.username = config.username;
  if (config.password !== undefined) options.password = config.password;
  if (config.tls) {
    const { ca, cert, key, rejectUnauthorized } = config.tls;
    options.rejectUnauthorized = rejectUnauthorized;
    if (ca !== undefined) options.ca = readFileSync(ca);
    if (cert !== undefined) options.cert = readFileSync(cert);
    if (key !== undefined) options.key = readFileSync(key);
  }
  return options;
}
