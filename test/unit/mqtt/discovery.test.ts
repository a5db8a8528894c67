import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { discoveryMessages, type DiscoveryContext } from '../../../src/api/mqtt/discovery-config.js';
import { Topics } from '../../../src/api/mqtt/topics.js';
import type { CounterMeta } from '../../../src/config/types.js';
import type { Device } from '../../../src/devices/device.js';
import { DigitalInput } from '../../../src/devices/digital/di.js';
import { TestBroker } from '../../helpers/mqtt-broker.js';
import { startGateway, type Gateway } from '../../helpers/mqtt-gateway.js';
import { Observer } from '../../helpers/mqtt-observer.js';

// Home Assistant discovery: retained config messages whose topics, templates
// and availability lead an MQTT client to the right state and command topics.

let broker: TestBroker;
let gateway: Gateway;
let observer: Observer;

before(async () => {
  broker = await TestBroker.start();
  gateway = await startGateway({
    port: broker.port,
    clientId: 'plc.house',
    extra: '    topic_prefix: house/plc\n    homeassistant:\n      enabled: true\n      discovery_prefix: ha',
  });
  observer = await Observer.connect(broker.url, ['ha/#', 'house/plc/#']);
  await observer.waitFor('house/plc/status', (text) => text === 'online');
});

after(async () => {
  await observer.close();
  await gateway.stop();
  await broker.stop();
});

const AVAILABILITY = [{ topic: 'house/plc/status' }, { topic: 'house/plc/availability/1' }];

test('a digital input is a binary_sensor reading value from its event topic', async () => {
  const message = await observer.waitFor('ha/binary_sensor/plc_house/di_1_01/config');
  assert.equal(message.retain, true);
  const config = JSON.parse(message.text);
  assert.equal(config.state_topic, 'house/plc/event/di/1_01');
  assert.equal(config.value_template, '{{ value_json.value }}');
  assert.equal(config.payload_on, '1');
  assert.equal(config.payload_off, '0');
  assert.equal(config.unique_id, 'plc_house_di_1_01');
  assert.deepEqual(config.availability, AVAILABILITY);
  assert.equal(config.availability_mode, 'all');
  assert.deepEqual(config.device.identifiers, ['plc_house_1']);
  assert.equal(config.device.manufacturer, 'Unipi');
  assert.equal(typeof config.device.model, 'string');
  assert.equal(typeof config.device.name, 'string');
});

test("a digital input's counter is a total_increasing sensor", async () => {
  const config = JSON.parse((await observer.waitFor('ha/sensor/plc_house/di_1_01_counter/config')).text);
  assert.equal(config.state_class, 'total_increasing');
  assert.equal(config.value_template, '{{ value_json.counter }}');
  assert.equal(config.state_topic, 'house/plc/event/di/1_01');
  assert.notEqual(config.unique_id, 'plc_house_di_1_01', 'unique per entity');
});

test('a digital output is a switch whose command topic and payloads work', async () => {
  const config = JSON.parse((await observer.waitFor('ha/switch/plc_house/do_1_02/config')).text);
  assert.equal(config.command_topic, 'house/plc/cmd/do/1_02');
  assert.equal(config.state_topic, 'house/plc/event/do/1_02');
  assert.deepEqual([config.payload_on, config.payload_off], ['1', '0']);
  assert.deepEqual(config.availability, AVAILABILITY);
  // As Home Assistant would: send payload_on, read the state through value_template's field.
  await observer.publish(config.command_topic, config.payload_on);
  await observer.waitForJson('house/plc/event/do/1_02', (state) => String(state.value) === config.payload_on);
  const ack = await observer.waitForJson('house/plc/ack/do/1_02');
  assert.equal(ack.success, true);
});

test('every discovered entity has a unique id', async () => {
  await observer.waitFor('ha/switch/plc_house/do_1_04/config');
  const ids = observer.received.filter((message) => message.topic.startsWith('ha/')).map((message) => JSON.parse(message.text).unique_id);
  assert.equal(new Set(ids).size, ids.length);
});

test("the brain board's analog channels and LEDs are discovered with their units and ranges", async () => {
  const input = JSON.parse((await observer.waitFor('ha/sensor/plc_house/ai_1_01/config')).text);
  assert.equal(input.unit_of_measurement, 'V');
  const output = JSON.parse((await observer.waitFor('ha/number/plc_house/ao_1_01/config')).text);
  assert.equal(output.command_topic, 'house/plc/cmd/ao/1_01');
  assert.equal(typeof output.min, 'number');
  assert.ok(output.max > output.min);
  const led = JSON.parse((await observer.waitFor('ha/switch/plc_house/led_1_01/config')).text);
  assert.equal(led.command_topic, 'house/plc/cmd/led/1_01');
});

// Analog channels, as their JSON looks (AI with `range`; Brain AO with the range only under its mode).
const context: DiscoveryContext = { topics: new Topics('p'), discoveryPrefix: 'homeassistant', bridgeId: 'plc', qos: 1 };
const slave = { name: '2', model: { name: 'xS51', blocks: [], features: [] } };

function fakeDevice(type: string, circuit: string, state: Record<string, unknown>): Device {
  return { type, circuit, alias: undefined, full: () => ({ dev: type, circuit, ...state }) } as unknown as Device;
}

test('an analog input is a measurement sensor with the unit of its mode', () => {
  const [message, ...rest] = discoveryMessages(fakeDevice('ai', '2_01', { value: 3.2, unit: 'V', mode: 'Voltage10', range: [0, 10] }), slave, context);
  assert.equal(rest.length, 0);
  assert.equal(message!.topic, 'homeassistant/sensor/plc/ai_2_01/config');
  assert.equal(message!.payload['state_class'], 'measurement');
  assert.equal(message!.payload['unit_of_measurement'], 'V');
  assert.equal(message!.payload['device_class'], 'voltage');
  assert.equal(message!.payload['value_template'], '{{ value_json.value }}');
  assert.equal(message!.payload['qos'], 1);
});

test('an analog output is a number with min and max from its range and a JSON command template', () => {
  const extension = discoveryMessages(fakeDevice('ao', '2_01', { value: 1.5, unit: 'V', mode: 'Voltage', range: [0, 10] }), slave, context);
  assert.equal(extension[0]!.topic, 'homeassistant/number/plc/ao_2_01/config');
  assert.deepEqual([extension[0]!.payload['min'], extension[0]!.payload['max']], [0, 10]);
  assert.equal(extension[0]!.payload['command_topic'], 'p/cmd/ao/2_01');
  assert.equal(extension[0]!.payload['command_template'], '{"value": {{ value }}}');
  const brain = discoveryMessages(
    fakeDevice('ao', '1_01', {
      mode: 'Current',
      modes: { Voltage: { value: 0, unit: 'V', range: [0, 10] }, Current: { value: 1, unit: 'mA', range: [0, 20] } },
      unit: 'mA',
      value: 4,
    }),
    slave,
    context,
  );
  assert.deepEqual([brain[0]!.payload['min'], brain[0]!.payload['max'], brain[0]!.payload['unit_of_measurement']], [0, 20, 'mA']);
});

test('relays and LEDs are switches; registers and watchdogs are not discovered', () => {
  assert.equal(discoveryMessages(fakeDevice('ro', '2_01', { value: 0 }), slave, context)[0]!.topic, 'homeassistant/switch/plc/ro_2_01/config');
  assert.equal(discoveryMessages(fakeDevice('led', '1_01', { value: 0 }), slave, context)[0]!.topic, 'homeassistant/switch/plc/led_1_01/config');
  assert.deepEqual(discoveryMessages(fakeDevice('register', '1_0', { value: 0 }), slave, context), []);
  assert.deepEqual(discoveryMessages(fakeDevice('watchdog', '1_01', { value: 0 }), slave, context), []);
});

/** A DI as the runtime builds it with `counters:` (a DigitalInput, so discovery reads its counterMeta). */
function meteredInput(counterMeta: CounterMeta | undefined): Device {
  return Object.assign(Object.create(DigitalInput.prototype) as object, {
    type: 'di',
    circuit: '2_01',
    alias: undefined,
    counterMeta,
    full: () => ({ dev: 'di', circuit: '2_01', value: 0, counter: 42 }),
    counterTotal: () => 1042,
  }) as unknown as Device;
}

test("a counter with a unit is a total_increasing sensor in that unit, scaled by its factor, for HA's energy and water dashboards", () => {
  const messages = discoveryMessages(meteredInput({ unit: 'L', factor: 0.5, deviceClass: 'water' }), slave, context);
  const byTopic = new Map(messages.map((message) => [message.topic, message.payload]));
  const counter = byTopic.get('homeassistant/sensor/plc/di_2_01_counter/config')!;
  const total = byTopic.get('homeassistant/sensor/plc/di_2_01_counter_total/config')!;
  for (const config of [counter, total]) {
    assert.equal(config['state_class'], 'total_increasing');
    assert.equal(config['unit_of_measurement'], 'L');
    assert.equal(config['device_class'], 'water');
  }
  assert.equal(counter['value_template'], '{{ (value_json.counter * 0.5) | round(9) }}');
  assert.equal(total['value_template'], '{{ ((value | float) * 0.5) | round(9) }}');
  // Without counters: pulses, no unit, as before.
  const plain = new Map(discoveryMessages(meteredInput(undefined), slave, context).map((message) => [message.topic, message.payload]));
  const pulses = plain.get('homeassistant/sensor/plc/di_2_01_counter/config')!;
  assert.equal(pulses['value_template'], '{{ value_json.counter }}');
  assert.equal(pulses['unit_of_measurement'], undefined);
  assert.equal(pulses['device_class'], undefined);
});
