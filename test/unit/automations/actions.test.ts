import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { startGate, stillBoardYaml, until, type Gate } from '../../helpers/in-process.js';
import { BRAIN_DO, OutputTimeline } from '../../helpers/output-timeline.js';
import { tempDir } from '../../helpers/temp-dir.js';

// The actions not covered elsewhere, judged at the simulated board: a cover
// command and position through the cover's own rules, and enabling and
// disabling another automation.

const dir = tempDir('iogate-automation-actions-');
let gate: Gate;
let timeline: OutputTimeline;

before(async () => {
  gate = await startGate(`alias_file: ${join(dir, 'alias.yaml')}\n${stillBoardYaml()}
covers:
  blind: {up: do/1_01, down: do/1_02, travel_up_s: 1, travel_down_s: 1, dwell_ms: 50}
automations:
  open_blind:
    when: {input: di/1_01, edge: rising}
    then: {cover: blind, command: open}
  half_blind:
    when: {input: di/1_02, edge: rising}
    then: {cover: blind, position: 50}
  lamp:
    when: {input: di/1_03, edge: rising}
    then: {output: do/1_03, toggle: true}
  lock_lamp:
    when: {input: di/1_04, edge: rising}
    then: {disable: lamp}
  unlock_lamp:
    when: {input: di/1_04, edge: falling}
    then: {enable: lamp}
`);
  timeline = new OutputTimeline(gate.board, [BRAIN_DO(1), BRAIN_DO(2), BRAIN_DO(3)]);
});

after(async () => {
  timeline.stop();
  await gate.close();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const cover = async () => (await (await fetch(`${gate.baseUrl}/rest/cover/blind`)).json()) as Record<string, unknown>;

test('cover: a command, then a position, through the cover (interlocked motor outputs, timed stop)', async () => {
  await sleep(200);
  gate.setInput(0, true);
  await until(() => timeline.isOn('do/1_01'), 'the motor up', 2000);
  await until(() => !timeline.isOn('do/1_01'), 'the end of the run', 4000);
  assert.equal((await cover())['position'], 100);
  gate.setInput(1, true);
  await until(() => timeline.isOn('do/1_02'), 'the motor down', 2000);
  await until(() => !timeline.isOn('do/1_02'), 'the stop at 50 %', 3000);
  const position = Number((await cover())['position']);
  assert.ok(Math.abs(position - 50) <= 5, `at ${position} %`);
  assert.ok(timeline.samples.every(({ on }) => !(on[0] && on[1])), 'never both motor outputs on');
});

test('disable and enable another automation', async () => {
  gate.setInput(3, true);
  await until(() => gate.runtime.automations.list().find((view) => view.id === 'lamp')?.enabled === false, 'lamp disabled', 2000);
  gate.setInput(2, true);
  await sleep(250);
  assert.equal(timeline.isOn('do/1_03'), false, 'disabled: nothing');
  gate.setInput(2, false);
  gate.setInput(3, false);
  await until(() => gate.runtime.automations.list().find((view) => view.id === 'lamp')?.enabled === true, 'lamp enabled', 2000);
  await sleep(100);
  gate.setInput(2, true);
  await until(() => timeline.isOn('do/1_03'), 'enabled again: it toggles', 2000);
});
