import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TestBroker } from '../../helpers/mqtt-broker.js';
import { startGateway } from '../../helpers/mqtt-gateway.js';
import { Observer } from '../../helpers/mqtt-observer.js';

// MQTT side of quality and counter totals: a DI's counter_total on its own
// retained topic (and as a Home Assistant sensor reading it), and a board
// that falls silent going unavailable on the topic its entities' discovery
// configs name, then available again.

test("counter_total has its own retained topic and HA sensor; a silent board's entities go unavailable, then come back", async () => {
  const broker = await TestBroker.start();
  const gateway = await startGateway({
    port: broker.port,
    clientId: 'meter',
    extra: '    homeassistant:\n      enabled: true\n      discovery_prefix: ha',
  });
  const observer = await Observer.connect(broker.url, ['ha/#', 'meter/#']);
  try {
    const config = JSON.parse((await observer.waitFor('ha/sensor/meter/di_1_01_counter_total/config')).text);
    assert.equal(config.state_topic, 'meter/event/di/1_01/counter_total');
    assert.equal(config.value_template, '{{ value }}');
    assert.equal(config.state_class, 'total_increasing');
    assert.deepEqual(config.availability, [{ topic: 'meter/status' }, { topic: 'meter/availability/1' }]);

    gateway.board.addPulses(0, 7);
    await observer.waitFor('meter/event/di/1_01/counter_total', (text) => text === '7');
    const late = await Observer.connect(broker.url, ['meter/event/di/1_01/counter_total']);
    const retained = await late.waitFor('meter/event/di/1_01/counter_total');
    assert.deepEqual([retained.text, retained.retain], ['7', true], 'retained for late subscribers');
    await late.close();
    // EVOK's JSON on the event topic is unchanged: no counter_total in it.
    const event = await observer.waitForJson('meter/event/di/1_01', (state) => state.counter === 7);
    assert.ok(!('counter_total' in event) && !('quality' in event));

    await observer.waitFor('meter/availability/1', (text) => text === 'online');
    observer.forget();
    gateway.board.powerOff();
    await observer.waitFor('meter/availability/1', (text) => text === 'offline', 15_000);
    // Power-cycled while away: the counter restarts at 0, the total goes on.
    gateway.board.powerOn(true);
    await observer.waitFor('meter/availability/1', (text) => text === 'online', 40_000);
    gateway.board.addPulses(0, 2);
    await observer.waitFor('meter/event/di/1_01/counter_total', (text) => text === '9');
  } finally {
    await observer.close();
    await gateway.stop();
    await broker.stop();
  }
});
