import assert from 'node:assert/strict';

import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createLogger } from '../../../src/logging/log.js';
import { postForm } from '../../helpers/http.js';
import { stillBoardYaml, until, type Gate } from '../../helpers/in-process.js';
import { BRAIN_DO, startWatchedGate, type OutputTimeline, type WatchedGate } from '../../helpers/output-timeline.js';
import { tempDir } from '../../helpers/temp-dir.js';
import { connect, deviceIn } from '../../helpers/ws-client.js';
import { NO_FIRMWARE_OFFLOAD } from '../../../src/automations/offload.js';

// The engine with the daemon's parts and a simulated Neuron brain board in
// this process: inputs are set at the simulator, outputs judged at the
// simulator (the output timeline), never through iogate's API.

const dir = tempDir('iogate-automations-');
const AUTOMATIONS = `
interlocks:
  - outputs: [led/1_02, led/1_03]
automations:
  stair_light:
    when: {input: di/1_01, edge: rising}
    then: {output: do/1_01, on_for_s: 0.4}
  lamp:
    when: {input: di/1_02, press: short}
    then: {output: do/1_02, toggle: true}
  hall_follow:
    when: {input: di/1_04}
    then: {output: do/1_04, follow: true}
    offload: firmware
  both:
    when: {input: di/1_03, edge: rising}
    then: {outputs: [led/1_02, led/1_03], set: on}
  manual_only:
    when: {at: "03:00", weekdays: [sun]}
    then: {output: led/1_01, pulse_ms: 200}
`;
const CONFIG = `alias_file: ${join(dir, 'alias.yaml')}\n${stillBoardYaml()}${AUTOMATIONS}`;

let watched: WatchedGate;
let gate: Gate;
let timeline: OutputTimeline;
const lines: string[] = [];

before(async () => {
  // Without the boards' DirectSwitch: this file checks that the engine runs a rule the firmware did not take.
  watched = await startWatchedGate(
    CONFIG,
    [BRAIN_DO(1), BRAIN_DO(2), BRAIN_DO(3), BRAIN_DO(4), { name: 'led/1_02', register: 20, bit: 1 }, { name: 'led/1_03', register: 20, bit: 2 }, { name: 'led/1_01', register: 20, bit: 0 }],
    { log: createLogger('DEBUG', (line) => lines.push(line)), offload: NO_FIRMWARE_OFFLOAD },
  );
  ({ gate, timeline } = watched);
});

after(async () => {
  await watched?.stop();
});

const automation = async (id: string) => (await (await fetch(`${gate.baseUrl}/rest/automation/${id}`)).json()) as Record<string, unknown>;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('automations on the one write path', () => {
  test('staircase: a rise switches the output on for on_for_s, a new rise restarts the time', async () => {
    gate.setInput(0, true);
    await until(() => timeline.isOn('do/1_01'), 'do/1_01 on', 2000);
    const start = performance.now();
    gate.setInput(0, false);
    await sleep(250);
    gate.setInput(0, true);
    await sleep(60);
    gate.setInput(0, false);
    await sleep(200);
    assert.equal(timeline.isOn('do/1_01'), true, 'still on: the second rise restarted the 0.4 s');
    await until(() => !timeline.isOn('do/1_01'), 'do/1_01 off', 2000);
    assert.ok(performance.now() - start >= 600, 'on for at least 250 + 400 ms');
    const state = await automation('stair_light');
    assert.equal(state['runs'], 2);
    assert.match(String(state['last_result']), /^ok: di\/1_01 rose/);
    assert.ok(lines.some((line) => line.includes('automation:stair_light: do/1_01 {"value":1,"pulse_ms":400}')), 'the write is attributed in the log');
  });

  test('short press toggles; a long hold does not', async () => {
    gate.setInput(1, true);
    await sleep(80);
    gate.setInput(1, false);
    await until(() => timeline.isOn('do/1_02'), 'do/1_02 toggled on', 2000);
    gate.setInput(1, true);
    await sleep(1000);
    gate.setInput(1, false);
    await sleep(200);
    assert.equal(timeline.isOn('do/1_02'), true, 'a hold of 1 s is not a short press');
    gate.setInput(1, true);
    await sleep(80);
    gate.setInput(1, false);
    await until(() => !timeline.isOn('do/1_02'), 'do/1_02 toggled off', 2000);
  });

  test('follow, not offloaded (no firmware offload here): the engine runs it and says why', async () => {
    const state = await automation('hall_follow');
    assert.equal(state['offloaded'], false);
    assert.ok(lines.some((line) => /automation:hall_follow: not offloaded \(firmware offload not available\); iogate runs it/.test(line)));
    gate.setInput(3, true);
    await until(() => timeline.isOn('do/1_04'), 'do follows on', 2000);
    gate.setInput(3, false);
    await until(() => !timeline.isOn('do/1_04'), 'do follows off', 2000);
  });

  test('interlocks hold: a scene switching two interlocked outputs on gets one refused, and says so', async () => {
    gate.setInput(2, true);
    await until(() => timeline.isOn('led/1_02') || timeline.isOn('led/1_03'), 'one on', 2000);
    await sleep(300);
    assert.ok(!(timeline.isOn('led/1_02') && timeline.isOn('led/1_03')), 'never both');
    assert.ok(timeline.samples.every(({ on }) => !(on[4] && on[5])), 'never both, at any write');
    const state = await automation('both');
    assert.match(String(state['last_result']), /^failed: .*interlock/i);
    gate.setInput(2, false);
  });

  test('WebSocket: the automation device is pushed when it changes; {cmd: set} switches it like a client write', async () => {
    const ws = await connect(gate.wsUrl);
    try {
      ws.send({ cmd: 'set', dev: 'automation', circuit: 'manual_only', enabled: 0 });
      const pushed = await ws.nextMatching((message) => deviceIn(message, 'automation', 'manual_only')?.['enabled'] === false);
      assert.equal(deviceIn(pushed, 'automation', 'manual_only')?.['runs'], 0);
      ws.send({ cmd: 'set', dev: 'automation', circuit: 'manual_only', enabled: 1 });
      await ws.nextMatching((message) => deviceIn(message, 'automation', 'manual_only')?.['enabled'] === true);
    } finally {
      await ws.close();
    }
  });

  test('REST: enabled=0 stops it, trigger=1 runs it by hand, bad fields are 400', async () => {
    assert.equal((await postForm(`${gate.baseUrl}/rest/automation/stair_light`, { enabled: '0' })).status, 200);
    assert.equal((await automation('stair_light'))['enabled'], false);
    gate.setInput(0, true);
    await sleep(300);
    assert.equal(timeline.isOn('do/1_01'), false, 'disabled: the rise does nothing');
    gate.setInput(0, false);
    await postForm(`${gate.baseUrl}/rest/automation/stair_light`, { enabled: '1' });
    const reply = await postForm(`${gate.baseUrl}/rest/automation/manual_only`, { trigger: '1' });
    assert.equal(reply.status, 200);
    await until(() => timeline.isOn('led/1_01'), 'manual run', 2000);
    await until(() => !timeline.isOn('led/1_01'), 'its pulse to end', 2000);
    const state = await automation('manual_only');
    assert.equal(typeof state['next_run'], 'string');
    assert.equal(state['runs'], 1);
    const bad = await postForm(`${gate.baseUrl}/rest/automation/stair_light`, { enabled: 'maybe' });
    assert.equal(bad.status, 400);
    assert.equal(bad.body['success'], false);
    const all = (await (await fetch(`${gate.baseUrl}/rest/all`)).json()) as Array<Record<string, unknown>>;
    assert.deepEqual(all.filter((device) => device['dev'] === 'automation').map((device) => device['circuit']), ['stair_light', 'lamp', 'hall_follow', 'both', 'manual_only']);
  });
});

