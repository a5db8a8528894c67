import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { writeMqttConfig } from '../helpers/mqtt-gateway.js';
import { Mosquitto, sleep, type Subscriber } from '../helpers/mosquitto.js';
import { spawnDaemon, type SpawnedDaemon } from '../helpers/spawn-daemon.js';

// iogate against Eclipse Mosquitto, watched and commanded only through the
// mosquitto_sub and mosquitto_pub command-line clients.

let mosquitto: Mosquitto;
let daemon: SpawnedDaemon;
let watcher: Subscriber;

const retainedOn = (topic: string) => mosquitto.retainedOn(topic);
const publish = (topic: string, message: string) => mosquitto.publish(topic, message);

async function httpState(circuit: string): Promise<Record<string, unknown>> {
  return (await (await fetch(`${daemon.apiUrl}/rest/do/${circuit}`)).json()) as Record<string, unknown>;
}

before(async () => {
  mosquitto = await Mosquitto.start();
  watcher = mosquitto.subscribe('interop/#');
  daemon = await spawnDaemon(['--config', writeMqttConfig({ port: mosquitto.port, clientId: 'interop' })]);
  await watcher.waitFor('interop/status', (payload) => payload === 'online');
});

after(async () => {
  watcher?.close();
  await daemon?.stop('SIGKILL');
  await mosquitto?.stop();
});

test('a late mosquitto_sub gets the retained state of every output', async () => {
  for (const circuit of ['1_01', '1_02', '1_03', '1_04']) {
    const state = JSON.parse(await retainedOn(`interop/event/do/${circuit}`));
    assert.equal(state.circuit, circuit);
    assert.equal(state.value, (await httpState(circuit))['value']);
  }
  assert.equal(await retainedOn('interop/status'), 'online');
});

test('a command from mosquitto_pub switches an output and is acknowledged', async () => {
  watcher.forget();
  await publish('interop/cmd/do/1_01', '{"value": 1}');
  const ack = JSON.parse((await watcher.waitFor('interop/ack/do/1_01')).payload);
  assert.equal(ack.success, true);
  assert.equal(ack.result.value, 1);
  assert.equal((await httpState('1_01'))['value'], 1, 'the HTTP API sees the output on');
  const event = await watcher.waitFor('interop/event/do/1_01', (payload) => JSON.parse(payload).value === 1);
  assert.equal(event.retained, false, 'live deliveries carry no retain flag');
  await publish('interop/cmd/output/1_01', 'OFF');
  await watcher.waitFor('interop/ack/output/1_01', (payload) => JSON.parse(payload).result?.value === 0);
  await publish('interop/cmd/do/1_01', 'nonsense');
  const refused = JSON.parse((await watcher.waitFor('interop/ack/do/1_01', (payload) => payload.includes('"success":false'))).payload);
  assert.ok(refused.errors.InvalidPayload);
});

test('the broker stopped for a while and restarted holds the final states', async () => {
  await mosquitto.stop();
  for (const [circuit, values] of [['1_02', [1, 0, 1]], ['1_03', [1, 0]], ['1_04', [0, 1, 1]]] as const) {
    for (const value of values) {
      const response = await fetch(`${daemon.apiUrl}/rest/do/${circuit}`, { method: 'POST', body: new URLSearchParams({ value: String(value) }) });
      assert.equal(response.status, 200, 'writes go on without the broker');
    }
  }
  await sleep(1500);
  await mosquitto.restart();
  for (const [circuit, value] of [['1_02', 1], ['1_03', 0], ['1_04', 1]] as const) {
    const deadline = Date.now() + 15_000;
    let state: { value?: unknown } = {};
    while (Date.now() < deadline) {
      try {
        state = JSON.parse(await retainedOn(`interop/event/do/${circuit}`));
        if (state.value === value) break;
      } catch {
        // Not republished yet: iogate reconnects with back-off.
      }
      await sleep(200);
    }
    assert.equal(state.value, value, `do ${circuit}`);
  }
  assert.equal(await retainedOn('interop/status'), 'online');
});

test('the will is published when iogate is killed with SIGKILL', async () => {
  const watcherAfterRestart = mosquitto.subscribe('interop/status');
  try {
    await watcherAfterRestart.waitFor('interop/status', (payload) => payload === 'online');
    await daemon.stop('SIGKILL');
    const will = await watcherAfterRestart.waitFor('interop/status', (payload) => payload === 'offline');
    assert.equal(will.payload, 'offline');
    assert.equal(await retainedOn('interop/status'), 'offline');
  } finally {
    watcherAfterRestart.close();
  }
});
