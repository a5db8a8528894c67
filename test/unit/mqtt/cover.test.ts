import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { TestBroker } from '../../helpers/mqtt-broker.js';
import { startGatewayOnBroker, type Gateway, type GatewayOnBroker } from '../../helpers/mqtt-gateway.js';
import { Observer } from '../../helpers/mqtt-observer.js';

// A cover over MQTT (aedes): its Home Assistant discovery config, commands in
// HA's payloads and as plain words or a position, acknowledged, with the
// simulated board's relays following. The Mosquitto interop suite checks the
// same config against HA's schema.

let rig: GatewayOnBroker;
let broker: TestBroker;
let gateway: Gateway;
let client: Observer;

before(async () => {
  rig = await startGatewayOnBroker({
    extra: '    homeassistant:\n      enabled: true',
    top: 'covers:\n  blind:\n    up: do/1_03\n    down: do/1_04\n    travel_up_s: 1\n    travel_down_s: 1\n    tilt_s: 0.2\n    overrun_s: 0.1\n    dwell_ms: 50',
  }, ['plc/#', 'homeassistant/#']);
  ({ broker, gateway, observer: client } = rig);
});

after(async () => {
  await rig?.stop();
});

/** DO i of the brain board is bit i-1 of holding register 1. */
function relay(n: number): boolean {
  return ((gateway.board.get('holding', 1) >> (n - 1)) & 1) === 1;
}

test('discovery: an HA cover with position and tilt on the cover topics, available with its board', async () => {
  const config = JSON.parse((await client.waitFor('homeassistant/cover/plc/cover_blind/config')).text);
  assert.equal(config.command_topic, 'plc/cmd/cover/blind');
  assert.equal(config.set_position_topic, 'plc/cmd/cover/blind');
  assert.equal(config.tilt_command_topic, 'plc/cmd/cover/blind');
  assert.equal(config.position_topic, 'plc/event/cover/blind');
  assert.equal(config.state_topic, 'plc/event/cover/blind');
  assert.deepEqual(config.availability, [{ topic: 'plc/status' }, { topic: 'plc/availability/1' }]);
  assert.equal(config.device.identifiers[0], 'plc_1');
});

test('HA payloads and plain words move the relays; every command is acknowledged', async () => {
  const config = JSON.parse((await client.waitFor('homeassistant/cover/plc/cover_blind/config')).text);
  client.forget();
  await client.publish(config.command_topic, config.payload_close);
  const ack = JSON.parse((await client.waitFor('plc/ack/cover/blind')).text);
  assert.equal(ack.success, true);
  assert.equal(ack.result.moving, 'down');
  assert.equal(relay(4), true);
  await client.waitForJson('plc/event/cover/blind', (state) => state.moving === 'stopped' && state.position === 0, 5000);
  assert.equal(relay(4), false);
  client.forget();
  await client.publish('plc/cmd/cover/blind', 'OPEN');
  await client.waitForJson('plc/ack/cover/blind', (body) => body.result?.moving === 'up');
  assert.equal(relay(3), true);
  await client.publish('plc/cmd/cover/blind', 'stop');
  await client.waitForJson('plc/ack/cover/blind', (body) => body.result?.moving === 'stopped');
  assert.equal(relay(3), false);
  client.forget();
  await client.publish('plc/cmd/cover/blind', '40');
  await client.waitForJson('plc/ack/cover/blind', (body) => body.success === true);
  await client.publish('plc/cmd/cover/blind', 'sideways');
  const refused = await client.waitForJson('plc/ack/cover/blind', (body) => body.success === false);
  assert.match(JSON.stringify(refused), /OPEN, CLOSE, STOP or a position/);
  await client.publish('plc/cmd/do/1_03', '{"value": 1}');
  const interlocked = await client.waitForJson('plc/ack/do/1_03', (body) => body.success === false);
  assert.match(interlocked.errors.InterlockError, /drives cover blind/);
});

/** The retained discovery configs, as a client that connects now gets them. */
async function retainedConfig(topic: string): Promise<Record<string, unknown>> {
  const fresh = await Observer.connect(broker.url, [topic]);
  try {
    return JSON.parse((await fresh.waitFor(topic)).text) as Record<string, unknown>;
  } finally {
    await fresh.close();
  }
}

test("discovery: the cover's relays are configuration switches, disabled by default; other outputs are not", async () => {
  for (const circuit of ['1_03', '1_04']) {
    const config = await retainedConfig(`homeassistant/switch/plc/do_${circuit}/config`);
    assert.equal(config['entity_category'], 'config', circuit);
    assert.equal(config['enabled_by_default'], false, circuit);
  }
  const plain = await retainedConfig('homeassistant/switch/plc/do_1_02/config');
  assert.equal(plain['entity_category'], undefined);
  assert.equal(plain['enabled_by_default'], undefined);
});

test('discovery: a cover at rest with no known position reads as unknown, not stopped', async () => {
  const config = await retainedConfig('homeassistant/cover/plc/cover_blind/config');
  assert.equal(
    config['value_template'],
    "{{ value_json.moving if value_json.moving in ('up', 'down') or (value_json.moving == 'stopped' and value_json.position is not none) else 'None' }}",
  );
});
