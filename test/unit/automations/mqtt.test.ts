import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { startMqtt, type MqttBridge } from '../../../src/api/mqtt/bridge.js';
import { createLogger } from '../../../src/logging/log.js';
import { TestBroker } from '../../helpers/mqtt-broker.js';
import { Observer } from '../../helpers/mqtt-observer.js';
import { startGate, stillBoardYaml, until, type Gate } from '../../helpers/in-process.js';
import { BRAIN_DO, OutputTimeline } from '../../helpers/output-timeline.js';
import { tempDir } from '../../helpers/temp-dir.js';

// An automation as a Home Assistant `switch` through a real broker (aedes):
// the discovery config, its state on the event topic, and switching it off
// and on from the command topic, which goes into the one write path.

const dir = tempDir('iogate-automation-mqtt-');
let gate: Gate;
let broker: TestBroker;
let bridge: MqttBridge;
let observer: Observer;
let timeline: OutputTimeline;

before(async () => {
  gate = await startGate(`alias_file: ${join(dir, 'alias.yaml')}\n${stillBoardYaml()}
automations:
  stair_light:
    when: {input: di/1_01, edge: rising}
    then: {output: do/1_01, on_for_s: 0.2}
`);
  timeline = new OutputTimeline(gate.board, [BRAIN_DO(1)]);
  broker = await TestBroker.start();
  observer = await Observer.connect(broker.url, ['plc/#', 'homeassistant/#']);
  const mqtt = gate.config.apis.mqtt;
  bridge = startMqtt({
    ...gate.runtime,
    config: { ...mqtt, enabled: true, address: '127.0.0.1', port: broker.port, clientId: 'plc', topicPrefix: 'plc', homeassistant: { enabled: true, discoveryPrefix: 'homeassistant' } },
    log: createLogger('CRITICAL'),
  });
});

after(async () => {
  timeline.stop();
  await observer.close();
  await bridge.stop();
  await gate.close();
  await broker.stop();
});

test('Home Assistant switch: discovery, state, and enable/disable from the command topic', async () => {
  const config = await observer.waitForJson('homeassistant/switch/plc/automation_stair_light/config');
  assert.equal(config.command_topic, 'plc/cmd/automation/stair_light');
  assert.equal(config.state_topic, 'plc/event/automation/stair_light');
  assert.equal(config.payload_off, '{"enabled": 0}');
  assert.deepEqual(config.availability, [{ topic: 'plc/status' }]);

  await observer.publish('plc/cmd/automation/stair_light', '{"enabled": 0}', { qos: 1 });
  await observer.waitForJson('plc/event/automation/stair_light', (state) => state.enabled === false);
  assert.equal(gate.runtime.automations.list()[0]!.enabled, false);
  gate.setInput(0, true);
  await new Promise((resolve) => setTimeout(resolve, 200));
  assert.equal(timeline.isOn('do/1_01'), false, 'disabled from Home Assistant: the rise does nothing');
  gate.setInput(0, false);

  await observer.publish('plc/cmd/automation/stair_light', '{"enabled": 1}', { qos: 1 });
  await observer.waitForJson('plc/event/automation/stair_light', (state) => state.enabled === true);
  await new Promise((resolve) => setTimeout(resolve, 100));
  gate.setInput(0, true);
  await until(() => timeline.isOn('do/1_01'), 'the staircase on again', 2000);
  const state = await observer.waitForJson('plc/event/automation/stair_light', (body) => body.runs === 1);
  assert.match(state.last_result, /^ok: /);
});
