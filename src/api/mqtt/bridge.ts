import type { MqttConfig } from '../../config/types.js';
import type { Device } from '../../devices/device.js';
import type { SlaveUnit } from '../../devices/slave/slave-unit.js';
import type { Logger } from '../../logging/log.js';
import type { ChangeFeed } from '../../registry/feed.js';
import type { Registry } from '../../registry/registry.js';
import { Cover } from '../../control/cover.js';
import { SlaveAvailability } from './availability.js';
import { CommandHandler } from './command-handler.js';
import { isSubscribeRefusal } from './connect-failure.js';
import { OFFLINE, ONLINE, connectBroker, type MqttLinkStats } from './connection.js';
import { DiscoveryPublisher } from './discovery.js';
import { watchPublishRefusals } from './publish-refusals.js';
import { StatePublisher } from './state-publisher.js';
import { Topics } from './topics.js';

// The MQTT interface as a whole: one broker connection carrying device states
// out, commands in, availability and Home Assistant discovery. main.ts loads
// this module only when `apis.mqtt.enabled` is set.

export interface MqttBridgeOptions {
  config: MqttConfig;
  registry: Registry;
  feed: ChangeFeed;
  slaves: readonly SlaveUnit[];
  log: Logger;
}

export interface MqttBridge {
  /** Mark iogate offline on the broker (a clean stop sends no Last Will) and disconnect. */
  stop(): Promise<void>;
  /** For /metrics. */
  stats(): MqttLinkStats;
}

const FIRST_SUBSCRIBE_RETRY_MS = 1000;
const MAX_SUBSCRIBE_RETRY_MS = 60_000;

export function startMqtt({ config, registry, feed, slaves, log }: MqttBridgeOptions): MqttBridge {
  const topics = new Topics(config.topicPrefix);
  const link = connectBroker(config, topics, log);
  const { client } = link;
  const { qos } = config;
  // Every publish goes through `sink`, which notices the ones the broker refuses (MQTT 5, QoS ≥ 1).
  const refusals = watchPublishRefusals(client, log, () => link.note('publish_denied'));
  const { sink } = refusals;
  const states = new StatePublisher({ sink, topics, qos, retain: config.retain, log });
  const availability = new SlaveAvailability(sink, topics, qos, slaves, log);
  const commands = new CommandHandler({ sink, topics, registry, feed, qos, log });
  const slaveOf = slaveIndex(slaves, registry);
  const discovery = config.homeassistant.enabled
    ? new DiscoveryPublisher(sink, { topics, discoveryPrefix: config.homeassistant.discoveryPrefix, bridgeId: config.clientId, qos }, (device) => slaveOf.get(device))
    : undefined;

  // A broker whose ACL denies the command topics answers the SUBSCRIBE with a
  // failure code (0x80, or 0x87 "not authorized" in MQTT 5). States still go
  // out if allowed; the subscription is asked again, less and less often, so a
  // fixed ACL (Mosquitto reloads it on SIGHUP) is picked up without a restart.
  let subscribeRetry: NodeJS.Timeout | undefined;
  let subscribeDelay = FIRST_SUBSCRIBE_RETRY_MS;
  let stopped = false;
  const subscribeCommands = (): void => {
    // Retain As Published (MQTT 5): a retained command keeps its flag when delivered live, and is refused.
    client.subscribe(topics.commandFilter, { qos, rap: true }, (error) => {
      if (!error) {
        subscribeDelay = FIRST_SUBSCRIBE_RETRY_MS;
        return;
      }
      const denied = isSubscribeRefusal(error);
      if (denied) link.note('subscribe_denied');
      const why = denied ? 'the broker denied the subscription: not authorized (ACL) [subscribe_denied]' : 'failed';
      log.error(`MQTT: cannot subscribe to ${topics.commandFilter}: ${why}: ${error.message}; commands are not received; asking again in ${subscribeDelay / 1000} s`);
      if (!denied || stopped || !client.connected) return;
      clearTimeout(subscribeRetry);
      subscribeRetry = setTimeout(() => {
        if (!stopped && client.connected) subscribeCommands();
      }, subscribeDelay);
      subscribeDelay = Math.min(subscribeDelay * 2, MAX_SUBSCRIBE_RETRY_MS);
    });
  };

  client.on('connect', () => {
    sink.publish(topics.status, ONLINE, { qos, retain: true });
    clearTimeout(subscribeRetry);
    subscribeDelay = FIRST_SUBSCRIBE_RETRY_MS;
    subscribeCommands();
    discovery?.publishAll(registry.devices());
    availability.publishAll();
    states.connected(registry.devices());
  });
  client.on('message', (topic, payload, packet) => commands.handle(topic, payload, packet.retain));

  const unsubscribe = feed.subscribe(
    (devices) => {
      states.changed(devices);
      availability.changed(devices);
      discovery?.changed(devices);
    },
    { includeSilent: true },
  );

  return {
    stats: () => link.stats(),
    async stop() {
      stopped = true;
      clearTimeout(subscribeRetry);
      refusals.stop();
      unsubscribe();
      // Written before the DISCONNECT, which waits for its acknowledgement (bounded: see close-client.ts).
      if (client.connected) sink.publish(topics.status, OFFLINE, { qos, retain: true });
      await link.close();
    },
  };
}

/** Each device's slave; a cover belongs to the slave of its up output. */
function slaveIndex(slaves: readonly SlaveUnit[], registry: Registry): Map<Device, SlaveUnit> {
  const index = new Map<Device, SlaveUnit>();
  for (const slave of slaves) for (const device of slave.devices) index.set(device, slave);
  for (const cover of registry.list('cover')) {
    const slave = cover instanceof Cover ? index.get(cover.up) : undefined;
    if (slave) index.set(cover, slave);
  }
  return index;
}
