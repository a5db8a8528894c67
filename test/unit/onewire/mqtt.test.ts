import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startGatewayOnBroker, type Gateway, type GatewayOnBroker } from '../../helpers/mqtt-gateway.js';
import { Observer } from '../../helpers/mqtt-observer.js';
import { until } from '../../helpers/in-process.js';

// 1-Wire sensors over MQTT: their state on the event topics, and Home
// Assistant discovery as temperature and humidity sensors that go
// unavailable while the sensor is lost.

let rig: GatewayOnBroker;
let gateway: Gateway;
let observer: Observer;
let circuits: string[];

before(async () => {
  rig = await startGatewayOnBroker({
    extra: '    homeassistant:\n      enabled: true\n      discovery_prefix: ha',
    buses: '  OW:\n    type: OWFS\n    interval: 1\n    scan_interval: 1\n    simulate: [28, 26, 29]',
  }, ['ha/#', 'plc/#']);
  ({ gateway, observer } = rig);
  const oneWire = gateway.runtime.oneWire[0]!;
  await until(() => oneWire.bus.sensors.size === 3, 'discovery');
  circuits = [...oneWire.bus.sensors.values()].map((sensor) => sensor.circuit);
});

after(async () => {
  await rig?.stop();
});

const NOT_LOST = "{{ 'offline' if value_json.lost else 'online' }}";

test('a thermometer is a temperature sensor reading `value`, unavailable while lost', async () => {
  const [thermometer] = circuits;
  const config = JSON.parse((await observer.waitFor(`ha/sensor/plc/sensor_${thermometer}/config`)).text);
  assert.equal(config.state_topic, `plc/event/sensor/${thermometer}`);
  assert.equal(config.value_template, '{{ value_json.value }}');
  assert.equal(config.device_class, 'temperature');
  assert.equal(config.unit_of_measurement, '°C');
  assert.equal(config.state_class, 'measurement');
  assert.deepEqual(config.availability, [{ topic: 'plc/status' }, { topic: `plc/event/sensor/${thermometer}`, value_template: NOT_LOST }]);
  assert.equal(config.availability_mode, 'all');
  assert.equal(config.device.model, 'DS18B20');
  const state = JSON.parse((await observer.waitFor(`plc/event/sensor/${thermometer}`, (text) => JSON.parse(text).value !== null)).text);
  assert.equal(state.dev, 'temp');
  assert.equal(typeof state.value, 'number');
});

test('a DS2438 is a temperature and a humidity sensor of one device; a DS2408 is not announced', async () => {
  const [, multi, pio] = circuits;
  const temp = JSON.parse((await observer.waitFor(`ha/sensor/plc/sensor_${multi}_temp/config`)).text);
  const humidity = JSON.parse((await observer.waitFor(`ha/sensor/plc/sensor_${multi}_humidity/config`)).text);
  assert.equal(temp.value_template, '{{ value_json.temp }}');
  assert.equal(temp.device_class, 'temperature');
  assert.equal(humidity.value_template, '{{ value_json.humidity }}');
  assert.equal(humidity.device_class, 'humidity');
  assert.equal(humidity.unit_of_measurement, '%');
  assert.deepEqual(temp.device.identifiers, humidity.device.identifiers);
  assert.notEqual(temp.unique_id, humidity.unique_id);
  // The DS2408's state is mirrored, but it gets no discovery config.
  await observer.waitFor(`plc/event/sensor/${pio}`);
  assert.ok(!observer.received.some((message) => message.topic.startsWith('ha/') && message.topic.includes(pio!)));
});
