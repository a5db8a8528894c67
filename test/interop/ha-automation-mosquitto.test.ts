import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, test } from 'node:test';
import { waitFor } from '../helpers/http.js';
import { startHaRelayBoard, type HaRelayBoard } from '../helpers/ha-relay-board.js';
import { sleep, type Mosquitto, type Subscriber } from '../helpers/mosquitto.js';
import { relayAtSimulator, setRelayBoardInput } from '../helpers/brain-relay-sim.js';
import type { SimProcess } from '../helpers/sim-process.js';
import type { SpawnedDaemon } from '../helpers/spawn-daemon.js';

// Home Assistant's view of an automation through Eclipse Mosquitto: the
// retained discovery config is a valid MQTT `switch` (only keys of HA's
// schema, its state read by HA's own template engine), and what HA publishes
// on the command topic switches the automation off and on. The effect is
// judged at the simulator, a board in another process: disabled, a rising
// input leaves the relay alone; enabled again, the same rise switches it.

/** Keys of Home Assistant's MQTT switch platform (home-assistant.io/integrations/switch.mqtt), with the common entity keys. */
const HA_SWITCH_KEYS = new Set([
  'availability', 'availability_mode', 'availability_template', 'availability_topic', 'command_template', 'command_topic', 'device',
  'device_class', 'enabled_by_default', 'encoding', 'entity_category', 'entity_picture', 'icon', 'json_attributes_template',
  'json_attributes_topic', 'name', 'object_id', 'default_entity_id', 'optimistic', 'payload_available', 'payload_not_available',
  'payload_off', 'payload_on', 'platform', 'qos', 'retain', 'state_off', 'state_on', 'state_topic', 'unique_id', 'value_template',
]);
const HA_DEVICE_KEYS = new Set(['configuration_url', 'connections', 'hw_version', 'identifiers', 'manufacturer', 'model', 'model_id', 'name', 'serial_number', 'suggested_area', 'sw_version', 'via_device']);
const HA_ENTITY_CATEGORIES = new Set(['config', 'diagnostic']);
const HA_SWITCH_CLASSES = new Set(['outlet', 'switch']);

let rig: HaRelayBoard;
let mosquitto: Mosquitto;
let sim: SimProcess;
let daemon: SpawnedDaemon;
let watcher: Subscriber;
let config: Record<string, any>;

before(async () => {
  // Run by iogate (not offloaded), so switching it off in iogate must stop it.
  rig = await startHaRelayBoard({ clientId: 'haauto', top: 'automations:\n  porch:\n    when: {input: di/2_01, edge: rising}\n    then: {output: ro/2_01, set: on}' });
  ({ mosquitto, sim, daemon, watcher } = rig);
});

after(async () => {
  await rig?.stop();
});

/** ro 2_01, the porch automation's relay, read at the simulator. */
const porchRelay = () => relayAtSimulator(sim, 0);

/** Sets DI 2_01 at the simulator and waits until iogate has read it (its REST view of the input, not of the output). */
async function setInput(on: boolean): Promise<void> {
  await setRelayBoardInput(sim, 0, on);
  await waitFor(async () => ((await (await fetch(`${daemon.baseUrl}/rest/di/2_01`)).json()) as { value: number }).value === (on ? 1 : 0), 5000);
}

async function automation(): Promise<{ enabled: boolean; runs: number }> {
  return (await (await fetch(`${daemon.baseUrl}/rest/automation/porch`)).json()) as { enabled: boolean; runs: number };
}

/** Renders HA's `value_template` with Jinja2 (HA's template engine) against a state payload, as HA does. */
function haState(template: string, payload: string): string {
  const script = 'import json, sys, jinja2\nprint(jinja2.Template(sys.argv[1]).render(value_json=json.loads(sys.argv[2]), value=sys.argv[2]))';
  return execFileSync('python3', ['-c', script, template, payload], { encoding: 'utf8', timeout: 20_000 }).trim();
}

test('the discovered automation is a valid Home Assistant MQTT switch', async () => {
  config = JSON.parse(await mosquitto.retainedOn('homeassistant/switch/haauto/automation_porch/config'));
  for (const key of Object.keys(config)) assert.ok(HA_SWITCH_KEYS.has(key), `'${key}' is not a key of HA's MQTT switch`);
  for (const key of Object.keys(config['device'])) assert.ok(HA_DEVICE_KEYS.has(key), `device '${key}'`);
  for (const key of ['command_topic', 'state_topic', 'unique_id', 'payload_on', 'payload_off']) assert.equal(typeof config[key], 'string', key);
  for (const key of ['command_topic', 'state_topic']) assert.ok(!/[+#]/.test(config[key]), `${key} has no wildcard`);
  if ('entity_category' in config) assert.ok(HA_ENTITY_CATEGORIES.has(config['entity_category']));
  if ('device_class' in config) assert.ok(HA_SWITCH_CLASSES.has(config['device_class']));
  assert.ok([0, 1, 2].includes(config['qos']));
  assert.notEqual(config['payload_on'], config['payload_off']);
  for (const { topic } of config['availability']) assert.equal(await mosquitto.retainedOn(topic), 'online');
  // What HA reads from the retained state: the template yields state_on or state_off.
  const state = await mosquitto.retainedOn(config['state_topic']);
  assert.equal(haState(config['value_template'], state), config['state_on'], 'enabled at start-up: HA shows it on');
});

test("HA's off on the command topic disables the automation: a rise at the simulator leaves the relay off", async () => {
  watcher.forget();
  await mosquitto.publish(config['command_topic'], config['payload_off']);
  const { payload } = await watcher.waitFor(config['state_topic'], (body) => JSON.parse(body).enabled === false);
  assert.equal(haState(config['value_template'], payload), config['state_off'], 'HA shows it off');
  await setInput(true);
  // Several scans (20 ms each) after iogate saw the rise: nothing moved.
  await sleep(300);
  assert.equal(await porchRelay(), false, 'disabled: the rise did not switch the relay');
  assert.equal((await automation()).runs, 0);
  await setInput(false);
});

test("HA's on enables it again: the next rise switches the relay at the simulator", async () => {
  watcher.forget();
  await mosquitto.publish(config['command_topic'], config['payload_on']);
  const { payload } = await watcher.waitFor(config['state_topic'], (body) => JSON.parse(body).enabled === true);
  assert.equal(haState(config['value_template'], payload), config['state_on'], 'HA shows it on');
  assert.equal(await porchRelay(), false, 'enabling alone switches nothing');
  await setInput(true);
  await waitFor(porchRelay, 5000);
  assert.equal((await automation()).runs, 1);
});
