import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { writeGate } from '../../../src/registry/write-gate.js';
import { startGate, until, type Gate } from '../../helpers/in-process.js';
import { BRAIN_DO, BRAIN_LED, OutputTimeline } from '../../helpers/output-timeline.js';
import { tempDir } from '../../helpers/temp-dir.js';

// Random input sequences driven at the simulated board, checked step by step
// against a small reference model of the rules, with the outputs sampled at
// the board after every write it served. Rules: a toggle on a rising edge,
// a follow, an inverted follow, a threshold with hysteresis on a register,
// and a scene that tries to switch an interlocked pair on together (the
// interlock must hold at every write: exactly one of the pair goes on).
// IOGATE_AUTOMATION_STEPS sets the number of steps.

const STEPS = Number(process.env['IOGATE_AUTOMATION_STEPS'] ?? 5000);
const SEED = Number(process.env['IOGATE_AUTOMATION_SEED'] ?? 20261129);
const STEPS_PER_RUN = 500;

const dir = tempDir('iogate-automation-property-');
const CONFIG = `
alias_file: ${join(dir, 'alias.yaml')}
comm_channels:
  SIM:
    type: SIMULATOR
    toggle_ms: 0
    devices:
      1:
        model: "00"
        scan_frequency: 1000
interlocks:
  - outputs: [led/1_01, led/1_02]
automations:
  toggler:
    when: {input: di/1_01, edge: rising}
    then: {output: do/1_01, toggle: true}
  follower:
    when: {input: di/1_02}
    then: {output: do/1_02, follow: true}
  inverter:
    when: {input: di/1_03}
    then: {output: do/1_03, follow: inverted}
  high:
    when: {input: register/1_0, above: 7.5, hysteresis: 3}
    then: {output: do/1_04, toggle: true}
  pair_on:
    when: {input: di/1_04, edge: rising}
    then: {outputs: [led/1_01, led/1_02], set: on}
  pair_off:
    when: {input: di/1_04, edge: falling}
    then: {outputs: [led/1_01, led/1_02], set: off}
`;

interface Model {
  inputs: number;
  toggled: boolean;
  armed: boolean;
  highToggled: boolean;
}

let gate: Gate;
let timeline: OutputTimeline;
const model: Model = { inputs: 0, toggled: false, armed: true, highToggled: false };

before(async () => {
  gate = await startGate(CONFIG);
  timeline = new OutputTimeline(gate.board, [BRAIN_DO(1), BRAIN_DO(2), BRAIN_DO(3), BRAIN_DO(4), BRAIN_LED(1), BRAIN_LED(2)]);
  // The follow rules act on the first good reading: do/1_03 (inverted) goes on.
  await until(() => timeline.isOn('do/1_03'), 'the inverted follow to take the first reading', 3000);
});

after(async () => {
  timeline?.stop();
  await gate?.close();
});

const macrotask = () => new Promise((resolve) => setImmediate(resolve));

/** Sets the inputs, waits until iogate read them and every write they caused was confirmed. */
async function drive(bits: number): Promise<void> {
  for (let i = 0; i < 4; i++) gate.setInput(i, ((bits >> i) & 1) === 1);
  const register = gate.runtime.registry.find('register', '1_0')!;
  await until(() => register.full()['value'] === bits, `iogate to read inputs ${bits}`, 3000);
  // Writes start a microtask or two after the feed; a chained change (a write's own event) can start another.
  for (let quiet = 0; quiet < 3; ) {
    await macrotask();
    quiet = writeGate.inFlight === 0 ? quiet + 1 : 0;
  }
}

function step(bits: number): void {
  const before = model.inputs;
  const rose = (i: number) => ((before >> i) & 1) === 0 && ((bits >> i) & 1) === 1;
  if (rose(0)) model.toggled = !model.toggled;
  if (model.armed && bits > 7.5) {
    model.armed = false;
    model.highToggled = !model.highToggled;
  } else if (!model.armed && bits < 4.5) model.armed = true;
  model.inputs = bits;
}

function check(bits: number, where: string): void {
  const bit = (i: number) => ((bits >> i) & 1) === 1;
  const [do1, do2, do3, do4, led1, led2] = timeline.now();
  assert.equal(do1, model.toggled, `${where}: do/1_01 toggles on each rise of di/1_01`);
  assert.equal(do2, bit(1), `${where}: do/1_02 follows di/1_02`);
  assert.equal(do3, !bit(2), `${where}: do/1_03 is the opposite of di/1_03`);
  assert.equal(do4, model.highToggled, `${where}: do/1_04 toggles when register/1_0 passes 7.5 (re-armed below 4.5)`);
  if (bit(3)) assert.equal(Number(led1) + Number(led2), 1, `${where}: the scene gets exactly one of the interlocked pair on`);
  else assert.deepEqual([led1, led2], [false, false], `${where}: both off after the fall`);
}

test(`automations against the simulator: ${STEPS} random input steps match the reference model, and the interlock holds at every write`, async () => {
  let done = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(fc.integer({ min: 0, max: 15 }), { minLength: STEPS_PER_RUN, maxLength: STEPS_PER_RUN }), async (sequence) => {
      for (const [index, bits] of sequence.entries()) {
        // Each step changes at least one input (an unchanged step makes no scan event to wait for).
        const next = bits === model.inputs ? bits ^ 1 : bits;
        step(next);
        await drive(next);
        check(next, `step ${done + index} (inputs ${next.toString(2).padStart(4, '0')})`);
      }
      done += sequence.length;
    }),
    { numRuns: Math.ceil(STEPS / STEPS_PER_RUN), seed: SEED, endOnFailure: true },
  );
  assert.ok(done >= STEPS, `${done} steps`);
  const pair = [timeline.index('led/1_01'), timeline.index('led/1_02')];
  assert.ok(timeline.samples.every(({ on }) => !(on[pair[0]!] && on[pair[1]!])), 'never both of the interlocked pair on, at any write the board served');
});
