import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createLogger } from '../../../src/logging/log.js';
import { get, list, postForm, postJson, type Loose } from '../../helpers/http.js';
import { startGate, stillBoardYaml, until, type Gate } from '../../helpers/in-process.js';
import { BRAIN_DO, startWatchedGate, type OutputTimeline, type WatchedGate } from '../../helpers/output-timeline.js';
import { connect } from '../../helpers/ws-client.js';
import { tempDir } from '../../helpers/temp-dir.js';

// Covers: commands, the position estimated from run time against the motor
// time seen at the simulated board, the end timer (a motor never runs on
// without a client), pre-emption (stop, dwell, reverse) and restarts.

const stateDir = tempDir('iogate-covers-');
const config = (dir: string) => `
alias_file: ${join(dir, 'alias.yaml')}
${stillBoardYaml({ errorReplies: true })}covers:
  blind:
    up: do/1_03
    down: do/1_04
    travel_up_s: 1.0
    travel_down_s: 0.8
    tilt_s: 0.3
    overrun_s: 0.2
    dwell_ms: 100
  plain:
    up: do/1_01
    down: do/1_02
    travel_up_s: 0.5
    travel_down_s: 0.5
`;

let watched: WatchedGate;
let gate: Gate;
let timeline: OutputTimeline;

before(async () => {
  watched = await startWatchedGate(config(stateDir), [BRAIN_DO(3), BRAIN_DO(4), BRAIN_DO(1), BRAIN_DO(2)]);
  ({ gate, timeline } = watched);
});

after(async () => {
  await watched?.stop();
});

async function cover(name = 'blind'): Promise<Loose> {
  return (await get(`${gate.baseUrl}/rest/cover/${name}`)).body;
}

async function stopped(name = 'blind'): Promise<Loose> {
  let state: Loose = {};
  const deadline = Date.now() + 5000;
  for (;;) {
    state = await cover(name);
    if (String(state['moving']) === 'stopped' && !timeline.isOn('do/1_03') && !timeline.isOn('do/1_04')) return state;
    if (Date.now() > deadline) throw new Error(`cover ${name} still moving: ${JSON.stringify(state)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Seconds each of up and down ran at the board since sample `from`. */
function motorTime(from: number): { up: number; down: number } {
  const up = timeline.index('do/1_03');
  const down = timeline.index('do/1_04');
  const time = { up: 0, down: 0 };
  const samples = timeline.samples.slice(from);
  for (let k = 0; k < samples.length - 1; k++) {
    const span = (samples[k + 1]!.at - samples[k]!.at) / 1000;
    if (samples[k]!.on[up]) time.up += span;
    if (samples[k]!.on[down]) time.down += span;
  }
  return time;
}

describe('covers', () => {
  test('unknown at first; open runs the whole way plus the overrun, stops by itself and is calibrated', async () => {
    const first = await cover();
    assert.deepEqual(first, { dev: 'cover', circuit: 'blind', position: null, tilt: null, moving: 'stopped', calibrated: false, up: 'do/1_03', down: 'do/1_04' });
    const from = timeline.samples.length;
    const reply = await postForm(`${gate.baseUrl}/rest/cover/blind`, { command: 'open' });
    assert.equal(reply.status, 200);
    assert.equal(reply.body['result']?.['moving'], 'up');
    assert.equal(timeline.isOn('do/1_03'), true);
    const end = await stopped();
    assert.equal(end['position'], 100);
    assert.equal(end['tilt'], 100);
    assert.equal(end['calibrated'], true);
    const { up, down } = motorTime(from);
    assert.equal(down, 0);
    assert.ok(Math.abs(up - 1.5) < 0.1, `ran ${up} s up (tilt 0.3 + travel 1.0 + overrun 0.2)`);
  });

  test('position=50 runs down for the tilt and half the travel; the estimate matches the motor time at the board', async () => {
    const from = timeline.samples.length;
    assert.equal((await postJson(`${gate.baseUrl}/json/cover/blind`, { position: 50 })).status, 200);
    const end = await stopped();
    const { down } = motorTime(from);
    // The board's motor time, turned into a position by the cover's physics: 0.3 s tilt, then 0.8 s per 100 %.
    const fromBoard = 100 - ((down - 0.3) / 0.8) * 100;
    assert.ok(Math.abs(Number(end['position']) - fromBoard) <= 2, `estimate ${end['position']} vs board ${fromBoard}`);
    // The stop is a timer: on a loaded runner it fires late (the estimate above still follows the board).
    assert.ok(Math.abs(Number(end['position']) - 50) <= 8, `position ${end['position']}`);
    assert.equal(end['tilt'], 0, 'running down closed the slats first');
  });

  test('tilt moves only the slats', async () => {
    const position = Number((await cover())['position']);
    const from = timeline.samples.length;
    assert.equal((await postForm(`${gate.baseUrl}/rest/cover/blind`, { tilt: '50' })).status, 200);
    const end = await stopped();
    // The estimate follows the motor time at the board (0.3 s from closed to open slats). The stop
    // itself is a timer: on a loaded runner it fires late, so the target gets a wider margin.
    const { up, down } = motorTime(from);
    assert.equal(down, 0);
    const fromBoard = (up / 0.3) * 100;
    assert.ok(Math.abs(Number(end['tilt']) - fromBoard) <= 3, `estimate ${end['tilt']} vs board ${fromBoard}`);
    assert.ok(Math.abs(Number(end['tilt']) - 50) <= 20, `tilt ${end['tilt']}`);
    assert.ok(Math.abs(Number(end['position']) - position) <= 2, `position ${end['position']}, was ${position}`);
  });

  test('a command against the running direction stops, waits the dwell, and reverses (at the board)', async () => {
    await postForm(`${gate.baseUrl}/rest/cover/blind`, { command: 'close' });
    await new Promise((resolve) => setTimeout(resolve, 150));
    const from = timeline.samples.length;
    assert.equal((await postForm(`${gate.baseUrl}/rest/cover/blind`, { command: 'open' })).status, 200);
    const samples = timeline.samples.slice(from - 1);
    const up = timeline.index('do/1_03');
    const down = timeline.index('do/1_04');
    const downOff = samples.find((sample) => !sample.on[down])!;
    const upOn = samples.find((sample) => sample.on[up])!;
    assert.ok(upOn.at - downOff.at >= 100, `dwell ${upOn.at - downOff.at} ms`);
    assert.ok(samples.every((sample) => !(sample.on[up] && sample.on[down])), 'never both on');
    await postForm(`${gate.baseUrl}/rest/cover/blind`, { command: 'stop' });
    assert.equal((await stopped())['moving'], 'stopped');
  });

  test('its outputs cannot be switched on directly (409); writing 0 stops the cover', async () => {
    const direct = await postForm(`${gate.baseUrl}/rest/do/1_04`, { value: '1' });
    assert.equal(direct.status, 409);
    assert.match(String(direct.body['errors']?.['InterlockError']), /drives cover blind/);
    assert.equal((await postForm(`${gate.baseUrl}/rest/do/1_04`, { value: '1', pulse_ms: '50' })).status, 409);
    await postForm(`${gate.baseUrl}/rest/cover/blind`, { command: 'close' });
    assert.equal((await postForm(`${gate.baseUrl}/rest/do/1_04`, { value: '0' })).status, 200);
    const state = await stopped();
    assert.equal(state['moving'], 'stopped');
    assert.equal(typeof state['position'], 'number');
  });

  test('bad commands are 400 and move nothing', async () => {
    const writes = timeline.samples.length;
    const bad: Array<Record<string, string>> = [{ command: 'jump' }, { position: '101' }, { position: '-1' }, { tilt: 'x' }, { command: 'open', position: '5' }, { speed: '3' }];
    for (const fields of bad) assert.equal((await postForm(`${gate.baseUrl}/rest/cover/blind`, fields)).status, 400, JSON.stringify(fields));
    assert.equal((await postForm(`${gate.baseUrl}/rest/cover/plain`, { tilt: '20' })).status, 400, 'no tilt configured');
    assert.equal(timeline.samples.length, writes);
  });

  test('listed in /rest/all and /json; RPC, bulk and WebSocket command it too', async () => {
    const all = list((await get(`${gate.baseUrl}/rest/all`)).body).filter((device) => String(device['dev']) === 'cover');
    assert.deepEqual(all.map((device) => device['circuit']), ['blind', 'plain']);
    assert.equal((await get(`${gate.baseUrl}/json/cover/plain`)).body['dev'], 'cover');
    const rpc = await postJson(`${gate.baseUrl}/rpc`, { jsonrpc: '2.0', id: 1, method: 'cover_set', params: ['plain', 'close'] });
    assert.equal(rpc.body['result']?.['moving'], 'down');
    const ws = await connect(gate.wsUrl);
    ws.send({ cmd: 'set', dev: 'cover', circuit: 'plain', value: 'stop' });
    await ws.nextMatching((message) => Array.isArray(message) && message.some((device: any) => device.dev === 'cover' && device.moving === 'stopped'));
    await ws.close();
    const bulk = await postJson(`${gate.baseUrl}/bulk`, { individual_assignments: [{ device_type: 'cover', device_circuit: 'plain', assigned_values: { command: 'open' } }] });
    assert.equal(bulk.status, 200);
    await until(() => timeline.isOn('do/1_01'), 'plain opening');
    await postForm(`${gate.baseUrl}/rest/cover/plain`, { command: 'stop' });
  });
});

describe('restarts', () => {
  test('a cover at rest comes back at its last position, not calibrated', async () => {
    const dir = tempDir('iogate-covers-rest-');
    writeFileSync(join(dir, 'outputs.json'), JSON.stringify({ pulses: {}, covers: { blind: { position: 37, tilt: 20, moving: false } } }));
    const second = await startGate(config(dir));
    try {
      const state = (await get(`${second.baseUrl}/rest/cover/blind`)).body;
      assert.deepEqual([state['position'], state['tilt'], state['calibrated'], state['moving']], [37, 20, false, 'stopped']);
    } finally {
      await second.close();
    }
  });

  test('a cover that was moving has no position after a restart, and the log says why', async () => {
    const dir = tempDir('iogate-covers-moving-');
    writeFileSync(join(dir, 'outputs.json'), JSON.stringify({ pulses: {}, covers: { blind: { position: 37, tilt: 20, moving: true } } }));
    const lines: string[] = [];
    const second = await startGate(config(dir), { log: createLogger('INFO', (line) => lines.push(line)) });
    try {
      const state = (await get(`${second.baseUrl}/rest/cover/blind`)).body;
      assert.deepEqual([state['position'], state['calibrated'], state['moving']], [null, false, 'stopped']);
      assert.ok(lines.some((line) => /cover blind was moving when iogate stopped/.test(line)));
    } finally {
      await second.close();
    }
  });

  test('a clean stop stops a moving cover first', async () => {
    const dir = tempDir('iogate-covers-stop-');
    const third = await startGate(config(dir));
    await postForm(`${third.baseUrl}/rest/cover/blind`, { command: 'open' });
    assert.equal(((third.board.get('holding', 1) >> 2) & 1), 1);
    await third.close();
    assert.equal(((third.board.get('holding', 1) >> 2) & 1), 0, 'the up output went off before iogate stopped');
  });
});
