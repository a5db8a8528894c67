import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { TestBroker } from '../../helpers/mqtt-broker.js';
import { createLogger } from '../../../src/logging/log.js';
import { startMqtt, type MqttBridge } from '../../../src/api/mqtt/bridge.js';
import { postForm, postJson } from '../../helpers/http.js';
import { startGate, stillBoardYaml, until, type Gate } from '../../helpers/in-process.js';
import { Observer } from '../../helpers/mqtt-observer.js';
import { BRAIN_DO, BRAIN_LED, OutputTimeline } from '../../helpers/output-timeline.js';
import { connect } from '../../helpers/ws-client.js';
import { tempDir } from '../../helpers/temp-dir.js';

// Timed pulses: `pulse_ms` beside `value` on every interface; the daemon
// switches the output off, a later write cancels that, bad values are 400,
// and the pulse is noted in the state directory while it runs.

const stateDir = tempDir('iogate-pulses-');
const CONFIG = `
alias_file: ${join(stateDir, 'alias.yaml')}
${stillBoardYaml()}`;

let gate: Gate;
let timeline: OutputTimeline;
let broker: TestBroker;
let bridge: MqttBridge;

before(async () => {
  gate = await startGate(CONFIG);
  timeline = new OutputTimeline(gate.board, [BRAIN_DO(1), BRAIN_DO(2), BRAIN_DO(3), BRAIN_LED(1)]);
  broker = await TestBroker.start();
  const { config } = gate;
  bridge = startMqtt({ ...gate.runtime, config: { ...config.apis.mqtt, enabled: true, address: '127.0.0.1', port: broker.port, clientId: 'plc', topicPrefix: 'plc' }, log: createLogger('CRITICAL') });
});

after(async () => {
  timeline.stop();
  await bridge.stop();
  await gate.close();
  await broker.stop();
});

/** How long `name` was on in its last on-off stretch at the board, in ms. */
function lastOnFor(name: string): number {
  const i = timeline.index(name);
  let off: number | undefined;
  for (let k = timeline.samples.length - 1; k > 0; k--) {
    const { at, on } = timeline.samples[k]!;
    const before = timeline.samples[k - 1]!.on;
    if (!on[i] && before[i] && off === undefined) off = at;
    else if (on[i] && !before[i] && off !== undefined) return off - at;
  }
  throw new Error(`${name} made no on-off pulse`);
}

describe('pulses', () => {
  test('REST: on now, off by the daemon after pulse_ms, measured at the board', async () => {
    const reply = await postForm(`${gate.baseUrl}/rest/do/1_01`, { value: '1', pulse_ms: '120' });
    assert.equal(reply.status, 200);
    assert.equal(reply.body['result']?.['value'], 1);
    assert.deepEqual(Object.keys(reply.body['result'] ?? {}), ['dev', 'circuit', 'value', 'pending', 'mode', 'modes', 'pwm_freq', 'pwm_duty', 'glob_dev_id']);
    assert.equal(timeline.isOn('do/1_01'), true);
    assert.match(readFileSync(join(stateDir, 'outputs.json'), 'utf8'), /"do\/1_01":\d+/, 'noted before the output went on');
    await until(() => !timeline.isOn('do/1_01'), 'the pulse to end', 2000);
    const length = lastOnFor('do/1_01');
    assert.ok(length >= 120 && length < 600, `pulse of ${length} ms`);
    await until(() => !/do\/1_01/.test(readFileSync(join(stateDir, 'outputs.json'), 'utf8')), 'the note to go once off', 3000);
  });

  test('JSON, bulk, RPC, WebSocket and MQTT take pulse_ms too', async () => {
    const ws = await connect(gate.wsUrl);
    const observer = await Observer.connect(broker.url, ['plc/ack/#', 'plc/status']);
    await observer.waitFor('plc/status', (text) => text === 'online');
    try {
      const sends: Array<[string, () => Promise<unknown>]> = [
        ['json', () => postJson(`${gate.baseUrl}/json/do/1_02`, { value: 1, pulse_ms: 80 })],
        ['bulk', () => postJson(`${gate.baseUrl}/bulk`, { individual_assignments: [{ device_type: 'do', device_circuit: '1_02', assigned_values: { value: 1, pulse_ms: 80 } }] })],
        ['rpc', () => postJson(`${gate.baseUrl}/rpc`, { jsonrpc: '2.0', id: 1, method: 'do_set', params: { circuit: '1_02', value: 1, pulse_ms: 80 } })],
        ['ws', async () => ws.send({ cmd: 'set', dev: 'do', circuit: '1_02', value: 1, pulse_ms: 80 })],
        ['mqtt', () => observer.publish('plc/cmd/do/1_02', '{"value": 1, "pulse_ms": 80}', { qos: 1 })],
      ];
      for (const [api, send] of sends) {
        await send();
        await until(() => timeline.isOn('do/1_02'), `${api}: on`, 2000);
        await until(() => !timeline.isOn('do/1_02'), `${api}: off after the pulse`, 2000);
        const length = lastOnFor('do/1_02');
        assert.ok(length >= 80, `${api}: pulse of ${length} ms`);
      }
    } finally {
      await ws.close();
      await observer.close();
    }
  });

  test('a later write cancels the pending off', async () => {
    await postForm(`${gate.baseUrl}/rest/led/1_01`, { value: '1', pulse_ms: '100' });
    await postForm(`${gate.baseUrl}/rest/led/1_01`, { value: '1' });
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(timeline.isOn('led/1_01'), true, 'stays on: the later write took over');
    await postForm(`${gate.baseUrl}/rest/led/1_01`, { value: '0' });
  });

  test('bad pulse_ms values are 400 and switch nothing', async () => {
    const writes = timeline.samples.length;
    const bad: Array<Record<string, string>> = [
      { value: '1', pulse_ms: '0' },
      { value: '1', pulse_ms: '-5' },
      { value: '1', pulse_ms: '86400001' },
      { value: '1', pulse_ms: 'abc' },
      { value: '1', pulse_ms: '1.5' },
      { value: '0', pulse_ms: '100' },
      { pulse_ms: '100' },
      { value: '1', pulse_ms: '100', timeout: '2' },
    ];
    for (const fields of bad) {
      const reply = await postForm(`${gate.baseUrl}/rest/do/1_03`, fields);
      assert.equal(reply.status, 400, JSON.stringify(fields));
      assert.equal(reply.body['success'], false);
    }
    assert.equal((await postForm(`${gate.baseUrl}/rest/ai/1_01`, { pulse_ms: '100' })).status, 400, 'not an output');
    assert.equal(timeline.samples.length, writes, 'nothing switched');
  });

  test('a pulse noted in the state file at start-up is reported and its output switched off', async () => {
    const dir = tempDir('iogate-pulse-restart-');
    writeFileSync(join(dir, 'outputs.json'), JSON.stringify({ pulses: { 'do/1_04': Date.now() + 60_000 }, covers: {} }));
    const lines: string[] = [];
    const second = await startGate(CONFIG.replace(`alias_file: ${join(stateDir, 'alias.yaml')}`, `alias_file: ${join(dir, 'alias.yaml')}`), {
      log: createLogger('INFO', (line) => lines.push(line)),
    });
    try {
      assert.ok(lines.some((line) => /pulse on do\/1_04 was running when iogate stopped \(60 s still to run\): switched off \(fail safe\)/.test(line)), lines.join(''));
      await until(() => existsSync(join(dir, 'outputs.json')) && !/1_04/.test(readFileSync(join(dir, 'outputs.json'), 'utf8')), 'the note to be dropped once off', 3000);
    } finally {
      await second.close();
    }
  });
});
