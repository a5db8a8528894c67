import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startHaRelayBoard, type HaRelayBoard } from '../helpers/ha-relay-board.js';
import { sleep, type Mosquitto, type Subscriber } from '../helpers/mosquitto.js';
import { relayAtSimulator } from '../helpers/brain-relay-sim.js';
import type { SimProcess } from '../helpers/sim-process.js';

// Home Assistant's view of a cover through Eclipse Mosquitto: the retained
// discovery config must use only keys of HA's MQTT cover schema, consistently,
// and the payloads and templates HA would send on its command topics must move
// the motor of a board simulated in another process (its relays read at the
// simulator, not through iogate).

/** Keys of Home Assistant's MQTT cover platform (home-assistant.io/integrations/cover.mqtt), with the common entity keys. */
const HA_COVER_KEYS = new Set([
  'availability', 'availability_mode', 'availability_template', 'availability_topic', 'command_topic', 'device', 'device_class',
  'enabled_by_default', 'encoding', 'entity_category', 'entity_picture', 'icon', 'json_attributes_template', 'json_attributes_topic',
  'name', 'object_id', 'default_entity_id', 'optimistic', 'payload_available', 'payload_close', 'payload_not_available', 'payload_open',
  'payload_stop', 'payload_stop_tilt', 'platform', 'position_closed', 'position_open', 'position_template', 'position_topic', 'qos',
  'retain', 'set_position_template', 'set_position_topic', 'state_closed', 'state_closing', 'state_open', 'state_opening',
  'state_stopped', 'state_topic', 'tilt_closed_value', 'tilt_command_template', 'tilt_command_topic', 'tilt_max', 'tilt_min',
  'tilt_opened_value', 'tilt_optimistic', 'tilt_status_template', 'tilt_status_topic', 'unique_id', 'value_template',
]);
const HA_DEVICE_KEYS = new Set(['configuration_url', 'connections', 'hw_version', 'identifiers', 'manufacturer', 'model', 'model_id', 'name', 'serial_number', 'suggested_area', 'sw_version', 'via_device']);
const HA_COVER_CLASSES = new Set(['awning', 'blind', 'curtain', 'damper', 'door', 'garage', 'gate', 'shade', 'shutter', 'window']);
/** An option HA accepts only together with another. */
const NEEDS: Array<[string, string]> = [
  ['value_template', 'state_topic'],
  ['position_template', 'position_topic'],
  ['set_position_template', 'set_position_topic'],
  ['tilt_command_template', 'tilt_command_topic'],
  ['tilt_status_template', 'tilt_status_topic'],
];

/** Relays of the relay board (brain-relay-sim.ts): ro 2_01 is bit 0. */
const UP_BIT = 0;
const DOWN_BIT = 1;

let rig: HaRelayBoard;
let mosquitto: Mosquitto;
let sim: SimProcess;
let watcher: Subscriber;

before(async () => {
  rig = await startHaRelayBoard({
    clientId: 'hacover',
    top: 'covers:\n  terrace:\n    up: ro/2_01\n    down: ro/2_02\n    travel_up_s: 3\n    travel_down_s: 2.5\n    tilt_s: 0.5\n    overrun_s: 0.3\n    dwell_ms: 200',
  });
  ({ mosquitto, sim, watcher } = rig);
});

after(async () => {
  await rig?.stop();
});

async function relays(): Promise<{ up: boolean; down: boolean }> {
  return { up: await relayAtSimulator(sim, UP_BIT), down: await relayAtSimulator(sim, DOWN_BIT) };
}

async function waitRelays(expected: { up: boolean; down: boolean }, timeoutMs = 8000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const now = await relays();
    if (now.up === expected.up && now.down === expected.down) return;
    if (Date.now() > deadline) throw new Error(`relays at the simulator ${JSON.stringify(now)}, expected ${JSON.stringify(expected)}`);
    await sleep(20);
  }
}

/** Jinja's `{{ name }}` filled in as HA does for command templates. */
function render(template: string, variables: Record<string, number>): string {
  return template.replace(/\{\{\s*(\w+)\s*\}\}/g, (_, name: string) => String(variables[name]));
}

let config: Record<string, any>;

test('the discovered cover config uses only Home Assistant MQTT cover keys, consistently', async () => {
  config = JSON.parse(await mosquitto.retainedOn('homeassistant/cover/hacover/cover_terrace/config'));
  for (const key of Object.keys(config)) assert.ok(HA_COVER_KEYS.has(key), `'${key}' is not a key of HA's MQTT cover`);
  for (const key of Object.keys(config['device'])) assert.ok(HA_DEVICE_KEYS.has(key), `device '${key}'`);
  for (const [option, needed] of NEEDS) if (option in config) assert.ok(needed in config, `${option} needs ${needed}`);
  assert.ok(HA_COVER_CLASSES.has(config['device_class']));
  assert.ok(config['tilt_min'] < config['tilt_max']);
  for (const key of ['command_topic', 'set_position_topic', 'tilt_command_topic', 'state_topic', 'position_topic', 'tilt_status_topic']) {
    assert.equal(typeof config[key], 'string', key);
    assert.ok(!/[+#]/.test(config[key]), `${key} is a topic to publish to or subscribe to, no wildcard`);
  }
  for (const { topic } of config['availability']) assert.equal(await mosquitto.retainedOn(topic), 'online');
  // The state topic carries what the templates read.
  const state = JSON.parse(await mosquitto.retainedOn(config['state_topic']));
  assert.deepEqual(Object.keys(state).filter((key) => ['position', 'tilt', 'moving'].includes(key)).sort(), ['moving', 'position', 'tilt']);
  for (const template of [config['value_template'], config['position_template'], config['tilt_status_template']]) assert.match(template, /value_json\.(moving|position|tilt)/);
});

test("HA's open on the command topic runs the motor up at the simulator; the state topic shows it moving, then open", async () => {
  watcher.forget();
  await mosquitto.publish(config['command_topic'], config['payload_open']);
  await waitRelays({ up: true, down: false });
  await watcher.waitFor(config['state_topic'], (payload) => JSON.parse(payload).moving === config['state_opening']);
  // The whole way plus the overrun from an unknown position, then the cover stops by itself.
  await waitRelays({ up: false, down: false }, 8000);
  const state = JSON.parse((await watcher.waitFor(config['state_topic'], (payload) => JSON.parse(payload).moving === config['state_stopped'])).payload);
  assert.equal(state.position, config['position_open']);
  assert.equal(state.calibrated, true);
});

test("HA's set_position and tilt templates move the cover to the position asked for", async () => {
  watcher.forget();
  await mosquitto.publish(config['set_position_topic'], render(config['set_position_template'], { position: 40 }));
  await waitRelays({ up: false, down: true });
  await waitRelays({ up: false, down: false });
  const state = JSON.parse((await watcher.waitFor(config['state_topic'], (payload) => JSON.parse(payload).moving === 'stopped')).payload);
  assert.ok(Math.abs(state.position - 40) <= 3, `position ${state.position}`);
  watcher.forget();
  await mosquitto.publish(config['tilt_command_topic'], render(config['tilt_command_template'], { tilt_position: 60 }));
  await waitRelays({ up: true, down: false });
  await waitRelays({ up: false, down: false });
  const tilted = JSON.parse((await watcher.waitFor(config['state_topic'], (payload) => JSON.parse(payload).moving === 'stopped')).payload);
  assert.ok(Math.abs(tilted.tilt - 60) <= 3, `tilt ${tilted.tilt}`);
});

test("HA's stop stops the motor mid-run", async () => {
  await mosquitto.publish(config['command_topic'], config['payload_close']);
  await waitRelays({ up: false, down: true });
  await mosquitto.publish(config['command_topic'], config['payload_stop']);
  await waitRelays({ up: false, down: false }, 2000);
});
