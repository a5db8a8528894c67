import { connect, type MqttClient } from 'mqtt';
import { count, runWorkers, sleep, type Target } from './common.js';
import type { Random } from './random.js';

// MQTT commands through Mosquitto: random command topics (real devices,
// aliases, EVOK's alternate names, garbage, deep and long topics) and
// payloads (ON/OFF, values, JSON objects, garbage, now and then a large one
// up to 2 MB), at QoS 0, 1 and 2, some retained. The huge single command
// with its own memory check is in run.ts (mqttHugeCommand).

export const TOPIC_PREFIX = 'fuzz';

const DEVICES = ['do', 'relay', 'ro', 'output', 'led', 'ao', 'analogoutput', 'di', 'input', 'wd', 'watchdog', 'register', 'temp', 'x', ''];
const CIRCUITS = ['1_01', '1_02', '1_04', '2_01', '2_02', '1_1', '9_99', 'al_1', '', 'é', '1_01/extra', '%31_01'];

function topic(rng: Random): string {
  return rng.weighted<string>([
    [12, `${TOPIC_PREFIX}/cmd/${rng.pick(DEVICES)}/${rng.pick(CIRCUITS)}`],
    [1, `${TOPIC_PREFIX}/cmd/${rng.pick(DEVICES)}`],
    [1, `${TOPIC_PREFIX}/cmd/${'a/'.repeat(rng.int(1, 100))}x`],
    [1, `${TOPIC_PREFIX}/cmd/do/${'c'.repeat(rng.int(100, 20_000))}`],
    [1, `${TOPIC_PREFIX}/${rng.pick(['status', 'event/do/1_01', 'ack/do/1_01', 'availability/1'])}`],
  ]);
}

function payload(rng: Random, budget: { largeBytes: number }): Buffer {
  const large = rng.chance(0.01) && budget.largeBytes > 0;
  if (large) {
    const size = Math.min(budget.largeBytes, rng.int(64 * 1024, 2 * 1024 * 1024));
    budget.largeBytes -= size;
    return Buffer.alloc(size, rng.pick([0x20, 0x7b, 0x31]));
  }
  const json = (value: unknown) => Buffer.from(JSON.stringify(value));
  return rng.weighted<() => Buffer>([
    [6, () => Buffer.from(rng.pick(['ON', 'OFF', 'on', '1', '0', '255', 'true', 'false', 'TOGGLE', '', ' ']))],
    [4, () => json({ value: rng.pick([0, 1, 2.5, -1, '1', null, true, 1e300]) })],
    [2, () => json({ mode: rng.pick(['Simple', 'PWM', 'x']), pwm_freq: rng.int(-1, 100_000), pwm_duty: rng.int(-10, 200) })],
    [2, () => rng.bytes(rng.length(8192))],
    [1, () => Buffer.from('{"value":' + '['.repeat(rng.int(1, 10_000)))],
    [1, () => json(Object.fromEntries(Array.from({ length: rng.int(1, 200) }, (_, i) => [`k${i}`, i])))],
  ])();
}

function connected(port: number, clientId: string): Promise<MqttClient> {
  return new Promise((resolve, reject) => {
    const client = connect({ host: '127.0.0.1', port, clientId, reconnectPeriod: 500, connectTimeout: 5000 });
    client.on('error', () => undefined);
    client.once('connect', () => resolve(client));
    setTimeout(() => reject(new Error(`MQTT client ${clientId} did not connect`)), 5000).unref();
  });
}

/** Publishes until the run stops; `largeBytes` bounds the large payloads of the whole run. */
export async function mqttAttack(target: Target, rng: Random, brokerPort: number, workers: number, largeBytes: number): Promise<void> {
  const { counts } = target;
  const budget = { largeBytes };
  const watcher = await connected(brokerPort, 'fuzz-watcher');
  watcher.subscribe(`${TOPIC_PREFIX}/ack/#`);
  watcher.on('message', () => count(counts, 'mqtt.acks'));
  const clients = await Promise.all(Array.from({ length: workers }, (_, i) => connected(brokerPort, `fuzz-publisher-${i}`)));
  try {
    await runWorkers(target, rng, 'mqtt', workers, async (rng, worker) => {
      const client = clients[worker]!;
      for (let i = 0; i < 50 && !target.stopped(); i++) {
        const body = payload(rng, budget);
        const qos = rng.pick([0, 0, 1, 2] as const);
        const retain = rng.chance(0.1);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, 2000);
          client.publish(topic(rng), body, { qos, retain }, () => {
            clearTimeout(timer);
            resolve();
          });
        });
        count(counts, 'mqtt.publishes');
        if (body.length > 64 * 1024) count(counts, 'mqtt.large_publishes');
        await sleep(rng.int(1, 20));
      }
    });
  } finally {
    await Promise.all([watcher, ...clients].map((client) => client.endAsync(true).catch(() => undefined)));
  }
}

/** One command of `bytes` to a real output: what the daemon's memory does is measured by the caller. */
export async function publishHugeCommand(brokerPort: number, bytes: number): Promise<{ acked: boolean }> {
  const client = await connected(brokerPort, 'fuzz-huge');
  try {
    const acked = new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), 15_000);
      client.subscribe(`${TOPIC_PREFIX}/ack/relay/1_01`, () => {
        client.publish(`${TOPIC_PREFIX}/cmd/relay/1_01`, Buffer.alloc(bytes, 0x20), { qos: 1 });
      });
      client.on('message', () => {
        clearTimeout(timer);
        resolve(true);
      });
    });
    return { acked: await acked };
  } finally {
    await client.endAsync(true).catch(() => undefined);
  }
}
