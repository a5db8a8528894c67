import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { TestBroker } from '../../helpers/mqtt-broker.js';
import { startGateway, type Gateway } from '../../helpers/mqtt-gateway.js';
import { Observer } from '../../helpers/mqtt-observer.js';

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

test('raw registers are mirrored too (EVOK never pushed them, #214)', async () => {
  const observer = await observe(['plc1/event/register/1_1', 'plc1/ack/#']);
  const before = await observer.waitForJson('plc1/event/register/1_1');
  assert.equal(before.value & 0b10, 0);
  await observer.publish('plc1/cmd/do/1_02', 'ON');
  const after = await observer.waitForJson('plc1/event/register/1_1', (state) => (state.value & 0b10) !== 0);
  assert.equal(after.dev, 'register');
});

test('analog outputs take JSON commands and publish their new value', async () => {
  const observer = await observe(['plc1/event/ao/1_01', 'plc1/ack/#']);
  await observer.publish('plc1/cmd/ao/1_01', '{"value": 2.5}');
  const ack = await observer.waitForJson('plc1/ack/ao/1_01');
  assert.equal(ack.success, true, JSON.stringify(ack));
  assert.equal(ack.result.value, 2.5);
  await observer.waitForJson('plc1/event/ao/1_01', (state) => state.value === 2.5);
  await observer.publish('plc1/cmd/analogoutput/1_01', '{"value": 1.25}');
  const alternate = await observer.waitForJson('plc1/ack/analogoutput/1_01');
  assert.equal(alternate.result.value, 1.25, 'answered under the name it was sent to');
  await observer.waitForJson('plc1/event/ao/1_01', (state) => state.value === 1.25);
  const ai = await (await observe(['plc1/event/ai/1_01'])).waitForJson('plc1/event/ai/1_01');
  assert.equal(ai.dev, 'ai');
  assert.equal(typeof ai.value, 'number');
});
