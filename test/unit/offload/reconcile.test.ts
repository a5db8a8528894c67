import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { reconcileFirmwareOffload, type OffloadDeps } from '../../../src/automations/offload/reconcile.js';
import { LEDGER_FILE } from '../../../src/automations/offload/ledger.js';
import { slaveOffloadDeps } from '../../../src/automations/offload/slave-deps.js';
import { controlGuard } from '../../../src/automations/offload/guard.js';
import { startGate, stillBoardYaml, type Gate } from '../../helpers/in-process.js';
import { tempDir } from '../../helpers/temp-dir.js';

// Reconcile against a simulated brain section (unit 1, masks at 1014/1015/1016)
// through the runtime's own slave, so every read and write queues on the bus.
// Judged at the simulator: its registers, and its outputs when an input moves.

const ENABLE = 1014;
const POLARITY = 1015;
const TOGGLE = 1016;

interface Rig {
  gate: Gate;
  deps: OffloadDeps;
  stateDir: string;
  logs: string[];
  masks(): number[];
}

async function rig(t: { after(fn: () => unknown): void }, guard: (output: string) => string | undefined = () => undefined): Promise<Rig> {
  const gate = await startGate();
  t.after(() => gate.close());
  const stateDir = tempDir('iogate-offload-');
  const logs: string[] = [];
  const deps = slaveOffloadDeps({ slaves: gate.runtime.slaves, stateDir, guard, log: (level, message) => logs.push(`${level}: ${message}`) });
  return { gate, deps, stateDir, logs, masks: () => [ENABLE, POLARITY, TOGGLE].map((address) => gate.board.get('holding', address)) };
}

const output = (gate: Gate) => gate.board.get('holding', 1);

test('reconcile writes the masks, verifies them, and the input then switches its output at the board', { timeout: 30_000 }, async (t) => {
  const { gate, deps, masks, stateDir } = await rig(t);
  const writesBefore = gate.board.writes;
  const results = await reconcileFirmwareOffload(deps, [
    { id: 'hall', input: 'di 1_01', output: 'do 1_01', mode: 'follow' },
    { id: 'stairs', input: 'di 1_02', output: 'do 1_02', mode: 'toggle' },
    { id: 'night', input: 'di 1_03', output: 'do 1_03', mode: 'inverted' },
  ]);
  assert.deepEqual(results, [
    { id: 'hall', offloaded: true },
    { id: 'stairs', offloaded: true },
    { id: 'night', offloaded: true },
  ]);
  assert.deepEqual(masks(), [0b0111, 0b0100, 0b0010]);
  assert.equal(gate.board.writes - writesBefore, 3, 'one write per mask register');
  // The inverted output went on when its mode did (input off).
  assert.equal(output(gate), 0b0100);
  gate.setInput(0, true);
  assert.equal(output(gate) & 1, 1);
  gate.setInput(1, true);
  gate.setInput(1, false);
  assert.equal(output(gate) & 2, 2);
  const ledger = JSON.parse(readFileSync(join(stateDir, LEDGER_FILE), 'utf8')) as { bits: Array<{ bit: number; rule: string }> };
  assert.deepEqual(ledger.bits.map((bit) => [bit.bit, bit.rule]), [[0, 'hall'], [1, 'stairs'], [2, 'night']]);

  // The same list again writes nothing.
  const writesSteady = gate.board.writes;
  await reconcileFirmwareOffload(deps, [
    { id: 'hall', input: 'di 1_01', output: 'do 1_01', mode: 'follow' },
    { id: 'stairs', input: 'di 1_02', output: 'do 1_02', mode: 'toggle' },
    { id: 'night', input: 'di 1_03', output: 'do 1_03', mode: 'inverted' },
  ]);
  assert.equal(gate.board.writes, writesSteady);
});

test('a reload without a rule clears its bits, and only those; bits set outside iogate are left and reported', { timeout: 30_000 }, async (t) => {
  const { gate, deps, masks, logs } = await rig(t);
  // Someone set DI 4 to DirectSwitch through the REST `mode` field.
  gate.board.set('holding', ENABLE, 0b1000);
  await reconcileFirmwareOffload(deps, [
    { id: 'hall', input: 'di 1_01', output: 'do 1_01', mode: 'inverted' },
    { id: 'stairs', input: 'di 1_02', output: 'do 1_02', mode: 'toggle' },
  ]);
  assert.deepEqual(masks(), [0b1011, 0b0001, 0b0010]);
  assert.ok(logs.some((line) => /DirectSwitch of input bit 3 is on, set outside iogate's automations; left as it is/.test(line)), logs.join('\n'));

  const results = await reconcileFirmwareOffload(deps, [{ id: 'stairs', input: 'di 1_02', output: 'do 1_02', mode: 'toggle' }]);
  assert.deepEqual(results, [{ id: 'stairs', offloaded: true }]);
  assert.deepEqual(masks(), [0b1010, 0, 0b0010]);
  const before = output(gate) & 1;
  gate.setInput(0, true);
  gate.setInput(0, false);
  assert.equal(output(gate) & 1, before, 'DI 1 no longer moves DO 1');
  assert.ok(logs.some((line) => /bit 0 cleared \(rule hall is no longer offloaded\)/.test(line)), logs.join('\n'));

  // No rule left: the rest of iogate's bits go, the outside one stays.
  await reconcileFirmwareOffload(deps, []);
  assert.deepEqual(masks(), [0b1000, 0, 0]);
});

test('the ledger carries across a restart: a new runtime clears what the previous one set', { timeout: 30_000 }, async (t) => {
  const { gate, deps, masks, stateDir } = await rig(t);
  await reconcileFirmwareOffload(deps, [{ id: 'hall', input: 'di 1_01', output: 'do 1_01', mode: 'follow' }]);
  assert.deepEqual(masks(), [1, 0, 0]);
  const restarted = slaveOffloadDeps({ slaves: gate.runtime.slaves, stateDir, guard: () => undefined, log: () => {} });
  assert.deepEqual(await reconcileFirmwareOffload(restarted, []), []);
  assert.deepEqual(masks(), [0, 0, 0]);
});

test('a slave that ignores the write: reported not offloaded, with what the read-back showed', { timeout: 30_000 }, async (t) => {
  const { deps, masks } = await rig(t);
  const ignoring: OffloadDeps = {
    ...deps,
    io(board) {
      const io = deps.io(board)!;
      // The slave acknowledges the write of the enable mask but keeps its old value.
      return { read: io.read, write: (address, value) => (address === ENABLE ? io.read(address).then(() => {}) : io.write(address, value)) };
    },
  };
  const [result] = await reconcileFirmwareOffload(ignoring, [{ id: 'hall', input: 'di 1_01', output: 'do 1_01', mode: 'inverted' }]);
  assert.equal(result!.offloaded, false);
  assert.match(result!.reason!, /board 1 did not keep the DirectSwitch setting: read back, its enable bit is off/);
  assert.equal(masks()[0], 0);
});

test('a silent board: not offloaded, the reason says so', { timeout: 30_000 }, async (t) => {
  const { deps } = await rig(t);
  const offline: OffloadDeps = { ...deps, io: () => ({ read: () => Promise.reject(new Error('slave 1: no answer')), write: () => Promise.reject(new Error('never')) }) };
  const [result] = await reconcileFirmwareOffload(offline, [{ id: 'hall', input: 'di 1_01', output: 'do 1_01', mode: 'follow' }]);
  assert.deepEqual(result, { id: 'hall', offloaded: false, reason: 'board 1 did not answer: slave 1: no answer' });
});

test('a refused rule touches no register: an interlocked output, an output not paired', { timeout: 30_000 }, async (t) => {
  const { gate, deps, masks } = await rig(t, (name) => (name === 'do 1_02' ? 'is in interlock group pumps' : undefined));
  const writes = gate.board.writes;
  const results = await reconcileFirmwareOffload(deps, [
    { id: 'a', input: 'di 1_02', output: 'do 1_02', mode: 'follow' },
    { id: 'b', input: 'di 1_01', output: 'do 1_03', mode: 'follow' },
  ]);
  assert.deepEqual(results.map((r) => r.offloaded), [false, false]);
  assert.match(results[0]!.reason!, /interlock group pumps/);
  assert.match(results[1]!.reason!, /paired output/);
  assert.equal(gate.board.writes, writes);
  assert.deepEqual(masks(), [0, 0, 0]);
});

test('the control layer\'s guard: interlocked outputs and covers\' relays are refused, named either way', { timeout: 30_000 }, async (t) => {
  const yaml = `${stillBoardYaml()}interlocks:
  - outputs: [do/1_01, do/1_02]
    dwell_ms: 150
covers:
  blind:
    up: do/1_03
    down: do/1_04
    travel_up_s: 10
    travel_down_s: 10
`;
  const gate = await startGate(yaml);
  t.after(() => gate.close());
  const guard = controlGuard(gate.runtime.registry, gate.config.interlocks, gate.config.covers);
  assert.equal(guard('do 1_01'), 'is in interlock group 1 (do/1_01, do/1_02)');
  assert.equal(guard('do/1_02'), 'is in interlock group 1 (do/1_01, do/1_02)');
  assert.equal(guard('do 1_04'), "is cover blind's down relay");
  const deps = slaveOffloadDeps({ slaves: gate.runtime.slaves, stateDir: tempDir('iogate-offload-'), guard, log: () => {} });
  const results = await reconcileFirmwareOffload(deps, [
    { id: 'a', input: 'di 1_01', output: 'do 1_01', mode: 'follow' },
    { id: 'b', input: 'di 1_03', output: 'do 1_03', mode: 'toggle' },
  ]);
  assert.deepEqual(results, [
    { id: 'a', offloaded: false, reason: 'do 1_01 is in interlock group 1 (do/1_01, do/1_02); the firmware would switch it past that rule' },
    { id: 'b', offloaded: false, reason: "do 1_03 is cover blind's up relay; the firmware would switch it past that rule" },
  ]);
  assert.equal(gate.board.get('holding', ENABLE), 0);
});

test('a rule changing mode: its enable bit goes off before the mode bits change, and on again after', { timeout: 30_000 }, async (t) => {
  const { deps, masks } = await rig(t);
  await reconcileFirmwareOffload(deps, [{ id: 'hall', input: 'di 1_01', output: 'do 1_01', mode: 'inverted' }]);
  const writes: Array<[number, number]> = [];
  const watched: OffloadDeps = {
    ...deps,
    io(board) {
      const io = deps.io(board)!;
      return { read: io.read, write: (address, value) => (writes.push([address, value]), io.write(address, value)) };
    },
  };
  assert.deepEqual(await reconcileFirmwareOffload(watched, [{ id: 'hall', input: 'di 1_01', output: 'do 1_01', mode: 'toggle' }]), [{ id: 'hall', offloaded: true }]);
  assert.deepEqual(writes, [[ENABLE, 0], [POLARITY, 0], [TOGGLE, 1], [ENABLE, 1]]);
  assert.deepEqual(masks(), [1, 0, 1]);
});
