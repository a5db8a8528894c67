import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { TestBroker } from './helpers/mqtt-broker.js';
import { startGateway, type Gateway } from './helpers/mqtt-gateway.js';
import { Observer } from './helpers/mqtt-observer.js';

// Device states mirrored onto retained event topics, as an independent client sees them.

let broker: TestBroker;
let gateway: Gateway;
const observers: Observer[] = [];

before(async () => {
  broker = await TestBroker.start();
  gateway = await startGateway({ port: broker.port, clientId: 'plc1' });
});

after(async () => {
  for (const observer of observers) await observer.close();
  await gateway.stop();
  await broker.stop();
});

async function observe(filters: string[]): Promise<Observer> {
  const observer = await Observer.connect(broker.url, filters);
  observers.push(observer);
  return observer;
}

test('a subscriber arriving late gets every device state, retained, under canonical type names', async () => {
  const first = await observe(['plc1/status']);
  await first.waitFor('plc1/status', (text) => text === 'online');
  const late = await observe(['plc1/event/#']);
  const expected = [...gateway.runtime.registry.devices()].map((device) => `plc1/event/${device.type}/${device.circuit}`);
  assert.ok(expected.includes('plc1/event/di/1_01') && expected.includes('plc1/event/do/1_04'));
  for (const topic of expected) {
    const message = await late.waitFor(topic);
    assert.equal(message.retain, true, `${topic} is retained`);
  }
  const di = JSON.parse((await late.waitFor('plc1/event/di/1_02')).text);
  assert.equal(di.dev, 'di');
  assert.equal(di.circuit, '1_02');
  assert.deepEqual(di, gateway.runtime.registry.resolve('di', '1_02').full(), 'the payload is the full JSON state');
});

test('an input change is published with the new value', async () => {
  const observer = await observe(['plc1/event/di/1_03']);
  await observer.waitForJson('plc1/event/di/1_03', (state) => state.value === 0);
  gateway.board.setBit(0, 2, true);
  const state = await observer.waitForJson('plc1/event/di/1_03', (body) => body.value === 1);
  assert.equal(state.circuit, '1_03');
});

test('a change of the counter is published too', async () => {
  const observer = await observe(['plc1/event/di/1_04']);
  const counterRegister = gateway.runtime.slaves[0]!.model.features.find((feature) => feature.type === 'DI')!;
  assert.ok('counter_reg' in counterRegister);
  gateway.board.set('holding', counterRegister.counter_reg + 2 * 3, 42);
  const state = await observer.waitForJson('plc1/event/di/1_04', (body) => body.counter === 42);
  assert.equal(state.counter, 42);
});
