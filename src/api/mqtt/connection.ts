import { readFileSync } from 'node:fs';
import { connect, type IClientOptions, type MqttClient } from 'mqtt';
import type { MqttConfig } from '../../config/types.js';
import type { Logger } from '../../log.js';
import type { Topics } from './topics.js';

// The broker connection: every `apis.mqtt` setting turned into mqtt.js
// options, the Last Will, and reconnection with a growing delay so a dead
// broker costs little. mqtt.js's own offline queue is switched off: the state
// publisher keeps the latest state per device instead, which stays bounded.

export const ONLINE = 'online';
export const OFFLINE = 'offline';

/** First reconnect delay; doubled after each failed attempt up to the cap. */
const FIRST_RECONNECT_MS = 500;
const MAX_RECONNECT_MS = 30_000;
const CONNECT_TIMEOUT_MS = 10_000;

export function connectBroker(config: MqttConfig, topics: Topics, log: Logger): MqttClient {
  const client = connect(clientOptions(config, topics));
  const where = `${config.tls ? 'mqtts' : 'mqtt'}://${config.address}:${config.port}`;
  let failures = 0;

  client.on('connect', () => {
    failures = 0;
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
    failures++;
    const message = `MQTT: ${where}: ${error.message}`;
    if (failures === 1) log.warn(message);
    else log.debug(message);
  });
  return client;
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
