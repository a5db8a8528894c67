import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ControlSetupError } from '../../../src/control/output-control.js';
import { createLogger } from '../../../src/logging/log.js';
import { get, list, postForm, postJson } from '../../helpers/http.js';
import { startGate, stillBoardYaml, until, type Gate } from '../../helpers/in-process.js';
import { BRAIN_DO, BRAIN_LED, OutputTimeline } from '../../helpers/output-timeline.js';
import { connect, type TestClient } from '../../helpers/ws-client.js';

// Interlock groups on the write path: refused with 409 and EVOK's envelope,
// or switched over; the dwell and the at-most-one rule checked at the
// simulated board, also for writes racing in from different APIs.

const CONFIG = `${stillBoardYaml({ errorReplies: true })}interlocks:
  - outputs: [do/1_01, do/1_02]
    dwell_ms: 150
  - outputs: [led/1_01, led/1_02, led/1_03]
    dwell_ms: 100
    switch_over: true
`;

let gate: Gate;
let timeline: OutputTimeline;
let ws: TestClient;

before(async () => {
  gate = await startGate(CONFIG);
  timeline = new OutputTimeline(gate.board, [BRAIN_DO(1), BRAIN_DO(2), BRAIN_LED(1), BRAIN_LED(2), BRAIN_LED(3)]);
  ws = await connect(gate.wsUrl);
});

after(async () => {
  timeline.stop();
  await ws.close();
  await gate.close();
});

/** Longest stretch with two outputs of `names` on together at the board (ms), and the shortest gap between one going off and another going on. */
function check(names: string[]): { overlaps: number; shortestGap: number } {
  const indices = names.map((name) => timeline.index(name));
  let overlaps = 0;
  let shortestGap = Infinity;
  const offAt = new Map<number, number>();
  let previous = timeline.samples[0]!.on;
  for (const sample of timeline.samples) {
    if (indices.filter((i) => sample.on[i]).length > 1) overlaps++;
    for (const i of indices) {
      if (previous[i] && !sample.on[i]) offAt.set(i, sample.at);
      if (!previous[i] && sample.on[i]) for (const [j, at] of offAt) if (j !== i) shortestGap = Math.min(shortestGap, sample.at - at);
    }
    previous = sample.on;
  }
  return { overlaps, shortestGap };
}

describe('refusing groups', () => {
  test('a write that would break the interlock is a 409 naming the output that is on', async () => {
    assert.equal((await postForm(`${gate.baseUrl}/rest/do/1_01`, { value: '1' })).status, 200);
    const refused = await postForm(`${gate.baseUrl}/rest/do/1_02`, { value: '1' });
    assert.equal(refused.status, 409);
    assert.equal(refused.body['success'], false);
    const message = String(refused.body['errors']?.['InterlockError']);
    assert.match(message, /do 1_01 is on/);
    assert.equal(timeline.isOn('do/1_02'), false, 'the refused output never went on');
    // The same over JSON and from a WebSocket.
    assert.equal((await postJson(`${gate.baseUrl}/json/do/1_02`, { value: 1 })).status, 409);
    ws.send({ cmd: 'set', dev: 'do', circuit: '1_02', value: 1 });
    const reply = await ws.nextMatching((message) => !Array.isArray(message) && message.success === false);
    assert.match(JSON.stringify(reply), /InterlockError/);
  });

  test('after the first goes off, the second goes on only once the dwell has passed (measured at the board)', async () => {
    await postForm(`${gate.baseUrl}/rest/do/1_01`, { value: '0' });
    assert.equal((await postForm(`${gate.baseUrl}/rest/do/1_02`, { value: '1' })).status, 200);
    assert.ok(check(['do/1_01', 'do/1_02']).shortestGap >= 150, 'dwell respected');
    await postForm(`${gate.baseUrl}/rest/do/1_02`, { value: '0' });
  });

  test('PWM counts as on, and value=0 with a timeout (an on later) is refused', async () => {
    assert.equal((await postForm(`${gate.baseUrl}/rest/do/1_01`, { pwm_duty: '50' })).status, 200);
    assert.equal((await postForm(`${gate.baseUrl}/rest/do/1_02`, { value: '1' })).status, 409);
    assert.equal((await postForm(`${gate.baseUrl}/rest/do/1_01`, { pwm_duty: '0' })).status, 200);
    const later = await postForm(`${gate.baseUrl}/rest/do/1_02`, { value: '0', timeout: '1' });
    assert.equal(later.status, 409);
  });

  test('writes racing from REST, JSON, bulk, RPC and WebSocket: at most one on, at the board, at every write', async () => {
    for (let round = 0; round < 20; round++) {
      await Promise.all([
        postForm(`${gate.baseUrl}/rest/do/1_01`, { value: '0' }),
        postForm(`${gate.baseUrl}/rest/do/1_02`, { value: '0' }),
      ]);
      const attempts = [
        postForm(`${gate.baseUrl}/rest/do/1_01`, { value: '1' }),
        postJson(`${gate.baseUrl}/json/do/1_02`, { value: 1 }),
        postJson(`${gate.baseUrl}/bulk`, { individual_assignments: [{ device_type: 'do', device_circuit: round % 2 ? '1_01' : '1_02', assigned_values: { value: 1 } }] }),
        postJson(`${gate.baseUrl}/rpc`, { jsonrpc: '2.0', id: round, method: 'output_set', params: [round % 3 ? '1_02' : '1_01', 1] }),
      ];
      ws.send({ cmd: 'set', dev: 'do', circuit: round % 2 ? '1_02' : '1_01', value: 1 });
      await Promise.all(attempts);
    }
    assert.equal(check(['do/1_01', 'do/1_02']).overlaps, 0, 'never two on at the board');
    await postForm(`${gate.baseUrl}/rest/do/1_01`, { value: '0' });
    await postForm(`${gate.baseUrl}/rest/do/1_02`, { value: '0' });
  });
});

describe('switch-over groups', () => {
  test('switching one on switches the other off, waits the dwell, then switches on', async () => {
    assert.equal((await postForm(`${gate.baseUrl}/rest/led/1_01`, { value: '1' })).status, 200);
    const switched = await postForm(`${gate.baseUrl}/rest/led/1_02`, { value: '1' });
    assert.equal(switched.status, 200);
    assert.deepEqual([timeline.isOn('led/1_01'), timeline.isOn('led/1_02')], [false, true]);
    const { overlaps, shortestGap } = check(['led/1_01', 'led/1_02', 'led/1_03']);
    assert.equal(overlaps, 0);
    assert.ok(shortestGap >= 100, `dwell ${shortestGap} ms`);
    await postForm(`${gate.baseUrl}/rest/led/1_02`, { value: '0' });
  });
});

describe('visibility', () => {
  test('EVOK device objects are unchanged; groups are a type of their own, absent from /rest/all', async () => {
    const output = (await get(`${gate.baseUrl}/rest/do/1_01`)).body;
    assert.deepEqual(Object.keys(output), ['dev', 'circuit', 'value', 'pending', 'mode', 'modes', 'pwm_freq', 'pwm_duty', 'glob_dev_id']);
    const all = list((await get(`${gate.baseUrl}/rest/all`)).body);
    assert.equal(all.filter((device) => String(device['dev']) === 'interlock').length, 0);
    const group = (await get(`${gate.baseUrl}/rest/interlock/2`)).body;
    assert.deepEqual(group, { dev: 'interlock', circuit: '2', outputs: ['led 1_01', 'led 1_02', 'led 1_03'], dwell_ms: 100, switch_over: true, on: [] });
    assert.equal((await postForm(`${gate.baseUrl}/rest/interlock/2`, { dwell_ms: '0' })).status, 400, 'read-only');
  });
});

describe('start-up', () => {
  test('a group found with two outputs on is switched all off, logged once', async () => {
    const lines: string[] = [];
    // Two outputs on before iogate reads the board: the simulated board is made with them on.
    const { SimulatedBoard } = await import('../../../src/sim/simulated-board.js');
    const original = SimulatedBoard.prototype.readRegisters;
    let primed = false;
    SimulatedBoard.prototype.readRegisters = function (this: InstanceType<typeof SimulatedBoard>, space, address, quantity) {
      if (!primed) {
        primed = true;
        this.set('holding', 1, 0b11);
      }
      return original.call(this, space, address, quantity);
    };
    let second: Gate | undefined;
    try {
      second = await startGate(CONFIG, { log: createLogger('INFO', (line) => lines.push(line)) });
    } finally {
      SimulatedBoard.prototype.readRegisters = original;
    }
    await until(() => (second!.board.get('holding', 1) & 0b11) === 0, 'both outputs off');
    assert.equal(lines.filter((line) => /interlocks\[0\]: do 1_01 and do 1_02 found on together at start-up; all switched off/.test(line)).length, 1);
    await second.close();
  });

  test('an interlock naming something that is not an output stops the start with a clear message', async () => {
    await assert.rejects(startGate(CONFIG.replace('do/1_02]', 'di/1_01]')), (error: Error) => error instanceof ControlSetupError && /di; only do, ro and led/.test(error.message));
    await assert.rejects(startGate(CONFIG.replace('do/1_02]', 'nosuch]')), ControlSetupError);
  });
});
