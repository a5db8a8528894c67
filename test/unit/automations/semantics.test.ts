import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { findModel } from '../../../src/boards/resolve.js';
import { loadConfig } from '../../../src/config/load.js';
import { createLogger } from '../../../src/logging/log.js';
import type { ReloadableRuntime } from '../../../src/runtime/runtime.js';
import { startGate, stillBoardYaml, until, type Gate } from '../../helpers/in-process.js';
import { BRAIN_DO, BRAIN_LED, OutputTimeline } from '../../helpers/output-timeline.js';
import { tempDir } from '../../helpers/temp-dir.js';

// The rules of docs/adr/0001-automation-semantics.md, each with a test:
// start-up, bad inputs, reload, loops, a threshold flapping at its limit.
// Inputs are driven and outputs judged at the simulated board.

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const gates: Gate[] = [];
const timelines: OutputTimeline[] = [];

after(async () => {
  for (const timeline of timelines) timeline.stop();
  for (const gate of gates) await gate.close();
});

async function gateWith(automations: string, { inputs = [] as number[] } = {}): Promise<{ gate: Gate; timeline: OutputTimeline; lines: string[]; dir: string }> {
  const dir = tempDir('iogate-automation-rules-');
  const lines: string[] = [];
  const yaml = `alias_file: ${join(dir, 'alias.yaml')}\n${stillBoardYaml()}\nautomations:\n${automations}`;
  // Inputs already on before the daemon starts: its first read sees them.
  const gate = await startGate(yaml, { log: createLogger('DEBUG', (line) => lines.push(line)), beforeStart: (board) => inputs.forEach((index) => board.setBit(0, index, true)) });
  gates.push(gate);
  const timeline = new OutputTimeline(gate.board, [BRAIN_DO(1), BRAIN_DO(2), BRAIN_DO(3), BRAIN_DO(4), BRAIN_LED(1), BRAIN_LED(2)]);
  timelines.push(timeline);
  return { gate, timeline, lines, dir };
}

async function reload(gate: Gate, dir: string, automations: string): Promise<void> {
  const file = join(dir, 'next.yaml');
  writeFileSync(file, `alias_file: ${join(dir, 'alias.yaml')}\n${stillBoardYaml()}\nautomations:\n${automations}`);
  const { config } = loadConfig({ file });
  await (gate.runtime as ReloadableRuntime).reload(config, (name) => findModel(name, new Map()));
}

const neverOn = (timeline: OutputTimeline, name: string) => timeline.samples.every(({ on }) => !on[timeline.index(name)]);

describe('start-up', () => {
  test('no edge is invented from the first read; a level rule acts after a good read', async () => {
    const { gate, timeline } = await gateWith(
      `  rise:\n    when: {input: di/1_01, edge: rising}\n    then: {output: do/1_01, set: on}\n` +
        `  mirror:\n    when: {input: di/1_02}\n    then: {output: do/1_02, follow: true}\n`,
      { inputs: [0, 1] },
    );
    await until(() => timeline.isOn('do/1_02'), 'the follow rule to take the input level', 2000);
    await sleep(300);
    assert.ok(neverOn(timeline, 'do/1_01'), 'an input already on at start-up is not a rising edge');
    gate.setInput(0, false);
    await sleep(150);
    gate.setInput(0, true);
    await until(() => timeline.isOn('do/1_01'), 'a real rise to act', 2000);
  });
});

describe('bad inputs', () => {
  test('an input that changed while its board was offline does not act when the board is back', async () => {
    const { gate, timeline, lines } = await gateWith(`  rise:\n    when: {input: di/1_01, edge: rising}\n    then: {output: do/1_01, set: on}\n`);
    await sleep(200);
    gate.board.silent = true;
    await until(() => gate.runtime.registry.find('di', '1_01')!.pointMeta(performance.now()).quality === 'offline', 'the board to be offline', 5000);
    gate.setInput(0, true);
    await sleep(200);
    gate.board.silent = false;
    await until(() => gate.runtime.registry.find('di', '1_01')!.pointMeta(performance.now()).quality === 'good', 'the board to be back', 5000);
    await sleep(300);
    assert.ok(neverOn(timeline, 'do/1_01'), 'the first good reading after the outage is a baseline, not an edge');
    assert.ok(!lines.some((line) => line.includes('automation:rise: do/1_01')), 'no write attributed to it');
  });

  test('a condition on a value that is not good never lets an action run', async () => {
    const { gate, timeline } = await gateWith(
      `  guarded:\n    when: {input: di/1_01, edge: rising}\n    if: {input: ai/1_01, below: 100}\n    then: {output: do/1_01, set: on}\n`,
    );
    await sleep(200);
    gate.setInput(0, true);
    await until(() => timeline.isOn('do/1_01'), 'the condition holds while the value is good', 2000);
    const ai = gate.runtime.registry.find('ai', '1_01')!;
    // A value older than its stale bound: made so by hand, as a board that stopped refreshing it would.
    const meta = ai.pointMeta.bind(ai);
    ai.pointMeta = (now) => ({ ...meta(now), quality: 'stale' });
    await (await fetch(`${gate.baseUrl}/rest/do/1_01`, { method: 'POST', body: 'value=0', headers: { 'content-type': 'application/x-www-form-urlencoded' } })).arrayBuffer();
    gate.setInput(0, false);
    await sleep(100);
    gate.setInput(0, true);
    await sleep(300);
    assert.equal(timeline.isOn('do/1_01'), false, 'a stale value never acts');
    const state = (await (await fetch(`${gate.baseUrl}/rest/automation/guarded`)).json()) as Record<string, unknown>;
    assert.match(String(state['last_result']), /^not run: a condition did not hold/);
  });
});

describe('threshold', () => {
  test('flapping around its limit fires once; it fires again only after passing back by the hysteresis', async () => {
    // register 1_0 holds the DI bits: DI 1 and 2 make 0..3.
    const { gate } = await gateWith(`  high:\n    when: {input: register/1_0, above: 1.5, hysteresis: 1}\n    then: {output: led/1_01, toggle: true}\n`);
    const set = async (value: number) => {
      gate.setInput(0, (value & 1) === 1);
      gate.setInput(1, (value & 2) === 2);
      await sleep(60);
    };
    await sleep(200);
    for (const value of [2, 1, 2, 1, 3, 1, 2, 1]) await set(value);
    const runs = async () => ((await (await fetch(`${gate.baseUrl}/rest/automation/high`)).json()) as Record<string, unknown>)['runs'];
    assert.equal(await runs(), 1, 'one run: 1 is above 1.5 − 1, so it never re-armed');
    await set(0);
    await set(2);
    assert.equal(await runs(), 2, 'back below 0.5, then above 1.5: fires again');
  });
});

describe('reload', () => {
  test('a changed automation restarts (its sequence stops, outputs to the safe state); an unchanged one keeps its timer', async () => {
    const keep = `  keep:\n    when: {input: di/1_01, edge: rising}\n    then: [{output: do/1_01, set: on}, {delay_s: 0.8}, {output: do/1_01, set: off}]\n`;
    const change = (seconds: number) => `  change:\n    when: {input: di/1_02, edge: rising}\n    then: [{output: do/1_02, set: on}, {delay_s: ${seconds}}, {output: do/1_02, set: off}]\n`;
    const { gate, timeline, lines, dir } = await gateWith(keep + change(30));
    await sleep(200);
    gate.setInput(0, true);
    gate.setInput(1, true);
    await until(() => timeline.isOn('do/1_01') && timeline.isOn('do/1_02'), 'both sequences on', 2000);
    const started = performance.now();
    await reload(gate, dir, keep + change(20));
    await until(() => !timeline.isOn('do/1_02'), 'the changed one to its safe state', 2000);
    assert.ok(lines.some((line) => /automation:change: its timed sequence stopped because its configuration changed; do\/1_02 put in the safe state \(off\)/.test(line)));
    assert.equal(timeline.isOn('do/1_01'), true, 'the unchanged one runs on');
    await until(() => !timeline.isOn('do/1_01'), 'the unchanged sequence to end on its own time', 3000);
    assert.ok(performance.now() - started >= 500, 'ended by its delay, not by the reload');
  });
});

describe('loops', () => {
  test('two automations switching each other are stopped at a bounded depth, logged and counted; nothing stays switching', async () => {
    const { gate, lines } = await gateWith(
      `  ping:\n    when: {input: do/1_03, edge: any}\n    then: {output: do/1_04, toggle: true}\n` +
        `  pong:\n    when: {input: do/1_04, edge: any}\n    then: {output: do/1_03, toggle: true}\n`,
    );
    await sleep(200);
    await (await fetch(`${gate.baseUrl}/rest/do/1_03`, { method: 'POST', body: 'value=1', headers: { 'content-type': 'application/x-www-form-urlencoded' } })).arrayBuffer();
    await until(() => lines.some((line) => /automation:(ping|pong): disabled, a loop/.test(line)), 'the loop guard', 10_000);
    assert.equal(gate.runtime.automations.stats.loopsStopped, 1);
    const metrics = await (await fetch(`${gate.baseUrl}/metrics`)).text();
    assert.match(metrics, /^iogate_automation_loops_stopped_total 1$/m);
    assert.match(metrics, /^iogate_automation_writes_total\{automation="ping",result="ok"\} [1-9]\d*$/m, 'writes attributed per automation');
    const writesAfter = gate.runtime.automations.stats.writes;
    await sleep(500);
    assert.ok(gate.runtime.automations.stats.writes - writesAfter <= 1, 'the loop has stopped');
  });
});

describe('restart by a new trigger', () => {
  test('a sequence triggered again starts over without switching its outputs off in between', async () => {
    const { gate, timeline } = await gateWith(`  hall:\n    when: {input: di/1_01, edge: rising}\n    then: [{output: do/1_01, set: on}, {delay_s: 0.5}, {output: do/1_01, set: off}]\n`);
    await sleep(200);
    gate.setInput(0, true);
    await until(() => timeline.isOn('do/1_01'), 'on', 2000);
    const onAt = performance.now();
    await sleep(300);
    gate.setInput(0, false);
    await sleep(60);
    gate.setInput(0, true);
    await until(() => !timeline.isOn('do/1_01'), 'off at the end of the second run', 3000);
    const i = timeline.index('do/1_01');
    const offs = timeline.samples.filter((sample, k) => k > 0 && timeline.samples[k - 1]!.on[i] && !sample.on[i]);
    assert.equal(offs.length, 1, 'one off, at the very end');
    assert.ok(performance.now() - onAt >= 800, 'the second trigger restarted the 0.5 s');
  });
});

describe('late trigger points', () => {
  test('an alias set after start-up binds the automation; its first reading is a baseline', async () => {
    const { gate, timeline } = await gateWith(`  wall:\n    when: {input: wall_switch, edge: rising}\n    then: {output: do/1_01, set: on}\n`);
    await sleep(200);
    const state = (await (await fetch(`${gate.baseUrl}/rest/automation/wall`)).json()) as Record<string, unknown>;
    assert.match(String(state['last_result']), /^waiting: wall_switch is not a known device/);
    gate.setInput(0, true);
    await sleep(1100);
    await (await fetch(`${gate.baseUrl}/rest/di/1_01`, { method: 'POST', body: 'alias=wall_switch', headers: { 'content-type': 'application/x-www-form-urlencoded' } })).arrayBuffer();
    await sleep(200);
    assert.ok(neverOn(timeline, 'do/1_01'), 'on when bound is a level, not a rise');
    gate.setInput(0, false);
    await sleep(100);
    gate.setInput(0, true);
    await until(() => timeline.isOn('do/1_01'), 'a rise once bound', 2000);
  });
});
