import assert from 'node:assert/strict';
import { test } from 'node:test';
import { StatePublisher } from '../../../src/api/mqtt/state-publisher.js';
import type { MqttSink } from '../../../src/api/mqtt/sink.js';
import { Topics } from '../../../src/api/mqtt/topics.js';
import type { Device } from '../../../src/devices/device.js';
import { createLogger } from '../../../src/logging/log.js';
import { writeDevice } from '../../../src/registry/write.js';
import { TestBroker } from '../../helpers/mqtt-broker.js';
import { startGateway } from '../../helpers/mqtt-gateway.js';
import { Observer } from '../../helpers/mqtt-observer.js';

// The broker going away: nothing may pile up meanwhile, and once it is back it
// must hold the latest state of every device.

test('broker stopped and restarted: the latest states are published again, the rest of iogate kept working', async () => {
  const broker = await TestBroker.start();
  const gateway = await startGateway({ port: broker.port, clientId: 'rc' });
  const { registry, feed } = gateway.runtime;
  try {
    const before = await Observer.connect(broker.url, ['rc/status']);
    await before.waitFor('rc/status', (text) => text === 'online');
    await before.close();

    await broker.stop();
    // Meanwhile outputs are switched many times (through the common write path, as HTTP would) and an input changes.
    for (let round = 0; round < 25; round++) {
      for (const circuit of ['1_01', '1_02', '1_03', '1_04']) {
        await writeDevice(registry, feed, registry.resolve('do', circuit), { value: round % 2 });
      }
    }
    await writeDevice(registry, feed, registry.resolve('do', '1_03'), { value: 1 });
    gateway.board.setBit(0, 1, true);
    await new Promise((resolve) => setTimeout(resolve, 1200));
    assert.equal(registry.resolve('di', '1_02').full()['value'], 1, 'polling went on without the broker');

    await broker.listen();
    const after = await Observer.connect(broker.url, ['rc/status', 'rc/event/#']);
    try {
      await after.waitFor('rc/status', (text) => text === 'online', 15_000);
      const expected: Record<string, number> = { '1_01': 0, '1_02': 0, '1_03': 1, '1_04': 0 };
      for (const [circuit, value] of Object.entries(expected)) {
        const state = await after.waitForJson(`rc/event/do/${circuit}`, (body) => body.value === value);
        assert.equal(state.value, value);
      }
      await after.waitForJson('rc/event/di/1_02', (body) => body.value === 1);
      // Every device is on the restarted broker again, not only the changed ones.
      for (const device of registry.devices()) await after.waitFor(`rc/event/${device.type}/${device.circuit}`);
    } finally {
      await after.close();
    }
  } finally {
    await gateway.stop();
    await broker.stop();
  }
});

/** A sink that records publishes and completes them at once, connected or not as the test says. */
function fakeSink(): MqttSink & { sent: Array<{ topic: string; payload: string }> } {
  const sink = {
    connected: false,
    sent: [] as Array<{ topic: string; payload: string }>,
    publish(topic: string, payload: string | Buffer, _options: unknown, callback?: (error?: Error) => void) {
      sink.sent.push({ topic, payload: String(payload) });
      callback?.();
      return sink;
    },
  };
  return sink as unknown as MqttSink & { sent: Array<{ topic: string; payload: string }> };
}

function fakeDevice(circuit: string): Device & { value: number } {
  const device = { type: 'do', circuit, value: 0, json: () => JSON.stringify({ circuit, value: device.value }) };
  return device as unknown as Device & { value: number };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

test('while disconnected, changes coalesce to one pending state per device', async () => {
  const sink = fakeSink();
  const publisher = new StatePublisher({ sink, topics: new Topics('p'), qos: 0, retain: true, log: createLogger('ERROR') });
  const devices = Array.from({ length: 10 }, (_, i) => fakeDevice(`1_${i}`));
  for (let change = 1; change <= 10_000; change++) {
    const device = devices[change % devices.length]!;
    device.value = change;
    publisher.changed([device]);
  }
  await tick();
  assert.equal(sink.sent.length, 0, 'nothing is handed to the client while disconnected');
  assert.equal(publisher.backlog, devices.length, 'the backlog is bounded by the number of devices');

  sink.connected = true;
  publisher.connected(devices);
  await tick();
  await tick();
  assert.equal(publisher.backlog, 0);
  assert.equal(sink.sent.length, devices.length, 'one publish per device');
  for (const device of devices) {
    const sent = sink.sent.find((message) => message.topic === `p/event/do/${device.circuit}`);
    assert.equal(JSON.parse(sent!.payload).value, device.value, 'the latest state');
  }
});
