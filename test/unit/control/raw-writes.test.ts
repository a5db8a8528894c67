import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startMqtt, type MqttBridge } from '../../../src/api/mqtt/bridge.js';
import { createLogger } from '../../../src/logging/log.js';
import { SimulatedBoard } from '../../../src/sim/simulated-board.js';
import { postForm, postJson, type Reply } from '../../helpers/http.js';
import { startGate, stillBoardYaml, until, type Gate } from '../../helpers/in-process.js';
import { startSparkplug } from '../../../src/api/sparkplug/start.js';
import { TestBroker } from '../../helpers/mqtt-broker.js';
import { TahuHost } from '../../helpers/sparkplug-host.js';
import { Observer } from '../../helpers/mqtt-observer.js';
import { BRAIN_DO, BRAIN_LED, OutputTimeline, RELAY_01 } from '../../helpers/output-timeline.js';
import { connect, type TestClient } from '../../helpers/ws-client.js';

// Raw writes that move outputs without naming them: a `register` that mirrors
// relays or DOs, a DO's PWM duty register, a DirectSwitch setting. Through
// every interface they meet the interlock and cover rules of an output write,
// judged at the simulated boards; writes that move no guarded output stay raw.

const DWELL_MS = 120;
/** The Sparkplug edge node is configured here, but runs only where a test starts it. */
const config = (brokerUrl: string) => `${stillBoardYaml({ errorReplies: true, devices: '      2:\n        model: "01"\n        slave-id: 2\n' }).replace(
  'apis:\n',
  `apis:\n  sparkplug:\n    enabled: true\n    group_id: plant\n    edge_node_id: node1\n    servers:\n      - url: ${brokerUrl}\n    write: true\n`,
)}interlocks:
  - outputs: [do/1_01, do/1_02]
    dwell_ms: ${DWELL_MS}
covers:
  c:
    up: ro/2_01
    down: ro/2_02
    travel_up_s: 20
    travel_down_s: 20
    dwell_ms: 50
`;

let gate: Gate;
let brain: SimulatedBoard;
let relays: SimulatedBoard;
let timeline: OutputTimeline;
let ws: TestClient;
let broker: TestBroker;
let bridge: MqttBridge;
let mqtt: Observer;

before(async () => {
  broker = await TestBroker.start();
  gate = await startGate(config(broker.url));
  const boards = gate.runtime.simulations.get('SIM')!.boards;
  brain = boards.get(1)!;
  relays = boards.get(2)!;
  timeline = new OutputTimeline([brain, relays], [BRAIN_DO(1), BRAIN_DO(2), BRAIN_DO(3), BRAIN_LED(1), BRAIN_LED(3), RELAY_01(2, 1, 1), RELAY_01(2, 2, 1), RELAY_01(2, 5, 1)]);
  ws = await connect(gate.wsUrl);
  bridge = startMqtt({ ...gate.runtime, config: { ...gate.config.apis.mqtt, enabled: true, address: '127.0.0.1', port: broker.port, clientId: 'plc', topicPrefix: 'plc' }, log: createLogger('CRITICAL') });
  mqtt = await Observer.connect(broker.url, ['plc/ack/#', 'plc/status']);
  await mqtt.waitFor('plc/status', (text) => text === 'online');
});

after(async () => {
  timeline?.stop();
  await ws?.close();
  await mqtt?.close();
  await bridge?.stop();
  await gate?.close();
  await broker?.stop();
});

/** Samples at the boards with two of `names` on together. */
function overlaps(names: string[]): number {
  const indices = names.map((name) => timeline.index(name));
  return timeline.samples.filter((sample) => indices.filter((i) => sample.on[i]).length > 1).length;
}

/** Shortest time at the board from one of `names` going off to another going on. */
function shortestGap(names: string[]): number {
  const indices = names.map((name) => timeline.index(name));
  const offAt = new Map<number, number>();
  let shortest = Infinity;
  let previous = timeline.samples[0]!.on;
  for (const sample of timeline.samples) {
    for (const i of indices) {
      if (previous[i] && !sample.on[i]) offAt.set(i, sample.at);
      if (!previous[i] && sample.on[i]) for (const [j, at] of offAt) if (j !== i) shortest = Math.min(shortest, sample.at - at);
    }
    previous = sample.on;
  }
  return shortest;
}

function refused(reply: Reply, pattern: RegExp): void {
  assert.equal(reply.status, 409, JSON.stringify(reply.body));
  assert.equal(reply.body['success'], false);
  assert.match(String(reply.body['errors']?.['InterlockError']), pattern);
}

/** Every interface's way of writing `fields` to `type/circuit`, each expected to be refused with an InterlockError matching `pattern`. */
async function refusedEverywhere(type: string, circuit: string, fields: Record<string, string | number>, pattern: RegExp): Promise<void> {
  const base = gate.baseUrl;
  refused(await postForm(`${base}/rest/${type}/${circuit}`, Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, String(v)]))), pattern);
  refused(await postJson(`${base}/json/${type}/${circuit}`, fields), pattern);
  const bulk = await postJson(`${base}/bulk`, { individual_assignments: [{ device_type: type, device_circuit: circuit, assigned_values: fields }] });
  assert.match(JSON.stringify(bulk.body), /InterlockError/, 'bulk');
  assert.match(JSON.stringify(bulk.body), pattern, 'bulk');
  const rpc = await postJson(`${base}/rpc`, { jsonrpc: '2.0', id: 1, method: `${type}_set`, params: { circuit, value: fields } });
  assert.ok(rpc.body['error'], `rpc: ${JSON.stringify(rpc.body)}`);
  assert.match(JSON.stringify(rpc.body['error']), pattern, 'rpc');
  ws.send({ cmd: 'set', dev: type, circuit, value: fields });
  const wsReply = await ws.nextMatching((message) => !Array.isArray(message) && message.success === false);
  assert.match(JSON.stringify(wsReply), pattern, 'websocket');
  const ack = mqtt.waitForJson(`plc/ack/${type}/${circuit}`, (body) => body.success === false);
  await mqtt.publish(`plc/cmd/${type}/${circuit}`, JSON.stringify(fields));
  assert.match(JSON.stringify(await ack), pattern, 'mqtt');
}

describe('mirror registers of interlocked outputs', () => {
  test('a register write that would switch both members on is refused on every interface, and nothing reaches the board', async () => {
    const writes = brain.writes;
    await refusedEverywhere('register', '1_1', { value: 3 }, /do 1_01 and do 1_02 stay off: .*interlocked \(interlocks\[0\]\)/);
    assert.equal(brain.writes, writes, 'no write reached the board');
    assert.equal(overlaps(['do/1_01', 'do/1_02']), 0);
    assert.deepEqual([timeline.isOn('do/1_01'), timeline.isOn('do/1_02')], [false, false]);
  });

  test('a register write that moves one member is carried out as output writes: the other off first, the dwell, then the on', async () => {
    const first = await postForm(`${gate.baseUrl}/rest/register/1_1`, { value: '1' });
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.equal((first.body['result'] as Record<string, unknown>)['value'], 1);
    assert.deepEqual([timeline.isOn('do/1_01'), timeline.isOn('do/1_02')], [true, false]);
    const second = await postJson(`${gate.baseUrl}/json/register/1_1`, { value: 2 });
    assert.equal(second.status, 200, JSON.stringify(second.body));
    assert.deepEqual([timeline.isOn('do/1_01'), timeline.isOn('do/1_02')], [false, true]);
    // Back: do 1_01's bit comes first in the register, yet do 1_02 goes off before it goes on.
    const third = await postJson(`${gate.baseUrl}/bulk`, { individual_assignments: [{ device_type: 'register', device_circuit: '1_1', assigned_values: { value: 1 } }] });
    assert.doesNotMatch(JSON.stringify(third.body), /rror/, JSON.stringify(third.body));
    assert.deepEqual([timeline.isOn('do/1_01'), timeline.isOn('do/1_02')], [true, false]);
    assert.equal(overlaps(['do/1_01', 'do/1_02']), 0, 'never both on at the board');
    assert.ok(shortestGap(['do/1_01', 'do/1_02']) >= DWELL_MS, `dwell kept: ${shortestGap(['do/1_01', 'do/1_02'])} ms`);
    // Bits of outputs in no group move with it: do 1_03 goes on beside the member left on.
    assert.equal((await postForm(`${gate.baseUrl}/rest/register/1_1`, { value: '6' })).status, 200);
    assert.deepEqual([timeline.isOn('do/1_02'), timeline.isOn('do/1_03')], [true, true]);
  });

  test("a DO's PWM duty register counts as switching it on", async () => {
    // do 1_02 is on: a duty for do 1_01 would have both energised.
    const writes = brain.writes;
    await refusedEverywhere('register', '1_16', { value: 500 }, /do 1_01 stays off: do 1_02 is on and interlocked/);
    assert.equal(brain.writes, writes, 'no write reached the board');
    assert.equal(brain.get('holding', 16), 0);
    assert.equal((await postForm(`${gate.baseUrl}/rest/register/1_1`, { value: '0' })).status, 200);
    assert.deepEqual([timeline.isOn('do/1_02'), timeline.isOn('do/1_03')], [false, false]);
  });

  test('a register that mirrors no guarded output is written raw, as before (one FC6)', async () => {
    const writes = brain.writes;
    const reply = await postForm(`${gate.baseUrl}/rest/register/1_20`, { value: '5' });
    assert.equal(reply.status, 200);
    assert.equal(brain.writes, writes + 1, 'one write');
    assert.deepEqual([timeline.isOn('led/1_01'), timeline.isOn('led/1_03')], [true, true]);
    assert.equal((await postForm(`${gate.baseUrl}/rest/register/1_20`, { value: '0' })).status, 200);
  });
});

test('the same over Sparkplug: a DCMD of a mirror register that would switch both members on is refused, one that moves one member is carried out', async () => {
  const node = startSparkplug(gate.config, gate.runtime, createLogger('CRITICAL'));
  const host = await TahuHost.connect(broker.url, 'plant');
  try {
    await host.waitFor((m) => m.edgeNode === 'node1' && m.type === 'DBIRTH' && m.device === '1');
    const writes = brain.writes;
    await host.command('node1', '1', [{ name: 'register/1_1/value', type: 'UInt16', value: 3 }]);
    await until(() => node.stats().commands.refused === 1, 'the command refused');
    assert.equal(brain.writes, writes, 'no write reached the board');
    await host.command('node1', '1', [{ name: 'register/1_1/value', type: 'UInt16', value: 2 }]);
    await until(() => node.stats().commands.accepted === 1, 'the command carried out');
    assert.deepEqual([timeline.isOn('do/1_01'), timeline.isOn('do/1_02')], [false, true]);
    assert.equal(overlaps(['do/1_01', 'do/1_02']), 0);
    await host.command('node1', '1', [{ name: 'register/1_1/value', type: 'UInt16', value: 0 }]);
    await until(() => node.stats().commands.accepted === 2, 'the command carried out');
  } finally {
    await node.stop();
    await host.close();
  }
});

describe("mirror registers of a cover's relays", () => {
  test("switching a cover's relay on through the register is refused; the other relays of the register still work", async () => {
    const writes = relays.writes;
    await refusedEverywhere('register', '2_1', { value: 1 | 16 }, /ro 2_01 drives cover c: command the cover/);
    assert.equal(relays.writes, writes, 'no write reached the board');
    assert.equal(timeline.isOn('ro/2_05'), false);
    const reply = await postForm(`${gate.baseUrl}/rest/register/2_1`, { value: '16' });
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    assert.deepEqual([timeline.isOn('ro/2_01'), timeline.isOn('ro/2_02'), timeline.isOn('ro/2_05')], [false, false, true]);
  });

  test('a moving cover keeps running when the register leaves its relay on, and stops when the register clears it', async () => {
    assert.equal((await postForm(`${gate.baseUrl}/rest/cover/c`, { command: 'open' })).status, 200);
    assert.equal(timeline.isOn('ro/2_01'), true);
    const cover = () => gate.runtime.registry.find('cover', 'c')!.full();
    // The up relay's bit set, ro 2_05 cleared: the motor runs on.
    assert.equal((await postForm(`${gate.baseUrl}/rest/register/2_1`, { value: '1' })).status, 200);
    assert.deepEqual([timeline.isOn('ro/2_01'), timeline.isOn('ro/2_05')], [true, false]);
    assert.equal(cover()['moving'], 'up');
    // Setting the down relay's bit too is refused as a whole.
    refused(await postForm(`${gate.baseUrl}/rest/register/2_1`, { value: '3' }), /ro 2_02 drives cover c/);
    assert.equal(overlaps(['ro/2_01', 'ro/2_02']), 0);
    // Clearing the bit stops the cover where its motor stopped.
    assert.equal((await postForm(`${gate.baseUrl}/rest/register/2_1`, { value: '0' })).status, 200);
    await until(() => cover()['moving'] === 'stopped', 'the cover stopped');
    assert.equal(timeline.isOn('ro/2_01'), false);
  });
});

describe('DirectSwitch', () => {
  test('an input whose DirectSwitch output is interlocked or drives a cover stays in Simple mode (409), on every interface', async () => {
    const writes = brain.writes;
    await refusedEverywhere('di', '1_01', { mode: 'DirectSwitch' }, /di 1_01 stays out of DirectSwitch mode: the board would switch do 1_01 by itself.*interlocks\[0\]/);
    assert.equal(brain.writes, writes, 'nothing written');
    assert.equal(brain.get('holding', 1014), 0);
    refused(await postForm(`${gate.baseUrl}/rest/di/2_02`, { mode: 'DirectSwitch', ds_mode: 'Toggle' }), /ro 2_02 by itself.*cover c/);
    // Through the raw register that holds the DirectSwitch bits as well.
    refused(await postForm(`${gate.baseUrl}/rest/register/1_1014`, { value: '3' }), /register 1_1014: di 1_01 stays out of DirectSwitch mode/);
    refused(await postForm(`${gate.baseUrl}/rest/register/2_1018`, { value: '1' }), /di 2_01 stays out of DirectSwitch mode.*ro 2_01.*cover c/);
    assert.equal(brain.get('holding', 1014), 0);
    assert.equal(relays.get('holding', 1018), 0);
  });

  test('an input whose output is in no group switches to DirectSwitch as before', async () => {
    const reply = await postForm(`${gate.baseUrl}/rest/di/1_03`, { mode: 'DirectSwitch' });
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    assert.equal(brain.get('holding', 1014), 0b100);
    // Its ds_mode too, and the register form of the same.
    assert.equal((await postForm(`${gate.baseUrl}/rest/di/1_03`, { ds_mode: 'Inverted' })).status, 200);
    assert.equal((await postForm(`${gate.baseUrl}/rest/register/1_1014`, { value: '12' })).status, 200);
    // Back to Simple is always allowed.
    assert.equal((await postForm(`${gate.baseUrl}/rest/register/1_1014`, { value: '0' })).status, 200);
    assert.equal((await postForm(`${gate.baseUrl}/rest/di/1_01`, { mode: 'Simple' })).status, 200);
  });

  test('an input found in DirectSwitch mode at start-up with a guarded output is left alone and logged', async () => {
    const lines: string[] = [];
    // The brain's DI 1 and DI 3 in DirectSwitch mode before iogate reads the board (as NV memory would have them).
    const original = SimulatedBoard.prototype.readRegisters;
    const primed = new WeakSet<SimulatedBoard>();
    SimulatedBoard.prototype.readRegisters = function (this: SimulatedBoard, space, address, quantity) {
      if (!primed.has(this) && this !== brain && this.model.name === '00') {
        primed.add(this);
        this.set('holding', 1014, 0b101);
      }
      return original.call(this, space, address, quantity);
    };
    let second: Gate | undefined;
    try {
      second = await startGate(config(broker.url), { log: createLogger('INFO', (line) => lines.push(line)) });
    } finally {
      SimulatedBoard.prototype.readRegisters = original;
    }
    try {
      const warned = lines.filter((line) => /DirectSwitch mode/.test(line));
      assert.equal(warned.length, 1, lines.join('\n'));
      assert.match(warned[0]!, /di 1_01 is in DirectSwitch mode: the board switches do 1_01 by itself, past iogate's rules \(interlocks\[0\]\); set di 1_01 mode=Simple/);
      assert.equal(second.board.get('holding', 1014), 0b101, 'the setting is left as found');
      // While it is in that mode, changing how it switches is refused too; leaving the mode is not.
      refused(await postForm(`${second.baseUrl}/rest/di/1_01`, { ds_mode: 'Toggle' }), /di 1_01 stays out of DirectSwitch mode/);
      refused(await postForm(`${second.baseUrl}/rest/register/1_1015`, { value: '1' }), /register 1_1015: di 1_01 stays out of DirectSwitch mode/);
      assert.equal(second.board.get('holding', 1015), 0);
      // di 1_03's output is in no group: its polarity may change.
      assert.equal((await postForm(`${second.baseUrl}/rest/register/1_1015`, { value: '4' })).status, 200);
      assert.equal((await postForm(`${second.baseUrl}/rest/di/1_01`, { mode: 'Simple' })).status, 200);
      assert.equal(second.board.get('holding', 1014), 0b100);
    } finally {
      await second.close();
    }
  });
});
