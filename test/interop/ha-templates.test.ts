import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { discoveryMessages, type DiscoveryContext } from '../../src/api/mqtt/discovery-config.js';
import { Topics } from '../../src/api/mqtt/topics.js';
import type { Device } from '../../src/devices/device.js';
import { DigitalInput } from '../../src/devices/digital/di.js';

// The templates of the discovery configs, rendered by Jinja2 (the engine of
// Home Assistant's templates) with the JSON iogate publishes: what HA would
// read as the entity's state.

const context: DiscoveryContext = { topics: new Topics('p'), discoveryPrefix: 'homeassistant', bridgeId: 'plc', qos: 1 };
const slave = { name: '1', model: { name: '00', blocks: [], features: [] } };

function fakeDevice(type: string, circuit: string, state: Record<string, unknown>): Device {
  return { type, circuit, alias: undefined, full: () => ({ dev: type, circuit, ...state }) } as unknown as Device;
}

/** Renders `template` with `value_json` (and `value`, the payload's text) for each of `states`, in one Python process. */
function render(template: string, states: unknown[]): string[] {
  const script = 'import json, sys, jinja2\nt = jinja2.Template(sys.argv[1])\nfor s in json.loads(sys.argv[2]): print(t.render(value_json=s, value=json.dumps(s)))';
  return execFileSync('python3', ['-c', script, template, JSON.stringify(states)], { encoding: 'utf8', timeout: 20_000 }).trim().split('\n');
}

test('a cover at rest with no known position is unknown (None); moving or placed, it says so', () => {
  const [config] = discoveryMessages(fakeDevice('cover', 'blind', {}), slave, context);
  const template = config!.payload['value_template'] as string;
  const rendered = render(template, [
    { moving: 'stopped', position: 40 },
    { moving: 'stopped', position: null },
    { moving: 'up', position: null },
    { moving: 'down', position: 10 },
    { moving: 'unknown', position: 40 },
  ]);
  assert.deepEqual(rendered, ['stopped', 'None', 'up', 'down', 'None']);
});

test('a counter with a factor reads as the counted quantity, on its state topic and on its total topic', () => {
  const input = Object.assign(Object.create(DigitalInput.prototype) as object, {
    type: 'di',
    circuit: '1_01',
    alias: undefined,
    counterMeta: { unit: 'm³', factor: 0.001, deviceClass: 'water' },
    full: () => ({ dev: 'di', circuit: '1_01', value: 0, counter: 1 }),
    counterTotal: () => 1,
  }) as unknown as Device;
  const payloads = new Map(discoveryMessages(input, slave, context).map((message) => [message.topic, message.payload]));
  const counter = payloads.get('homeassistant/sensor/plc/di_1_01_counter/config')!['value_template'] as string;
  const total = payloads.get('homeassistant/sensor/plc/di_1_01_counter_total/config')!['value_template'] as string;
  assert.deepEqual(render(counter, [{ counter: 0 }, { counter: 1234 }, { counter: 4294967295 }]).map(Number), [0, 1.234, 4294967.295]);
  // The total topic carries a bare number, which HA hands over as `value` (text).
  assert.deepEqual(render(total, [0, 3, 1234567]).map(Number), [0, 0.003, 1234.567]);
});
