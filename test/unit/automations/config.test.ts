import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, test } from 'node:test';
import { describeAutomation } from '../../../src/automations/describe.js';
import { automationReferenceProblems } from '../../../src/automations/references.js';
import { findModel } from '../../../src/boards/resolve.js';
import { ConfigError } from '../../../src/config/errors.js';
import { loadConfig } from '../../../src/config/load.js';
import { BUNDLE } from '../../helpers/spawn-daemon.js';
import { tempDir } from '../../helpers/temp-dir.js';

// `automations:` and `location:` as read from config.yaml: the documented
// shapes load, mistakes get precise messages with file:line and key path,
// references are checked against the boards, and --check-config prints each
// automation as one plain sentence.

const dir = tempDir('iogate-automation-config-');
const BOARD = `alias_file: ${join(dir, 'alias.yaml')}
comm_channels:
  SIM:
    type: SIMULATOR
    devices:
      1:
        model: "00"
covers:
  blind: {up: do/1_03, down: do/1_04, travel_up_s: 20, travel_down_s: 20}
`;

function load(yaml: string) {
  const file = join(dir, `c${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(file, BOARD + yaml);
  return { file, ...loadConfig({ file }) };
}

function problems(yaml: string): string[] {
  try {
    load(yaml);
    return [];
  } catch (error) {
    if (error instanceof ConfigError) return [...error.problems];
    throw error;
  }
}

const EXAMPLE = `
location: {latitude: 50.08, longitude: 14.42, time_zone: Europe/Prague}
automations:
  stair_light:
    when: {input: di/1_01, edge: rising}
    then: {output: do/1_01, on_for_s: 180}
  lamp:
    when: {input: di/1_02, press: short}
    then: {output: do/1_02, toggle: true}
  hall_follow:
    when: {input: di/1_04}
    then: {output: do/1_04, follow: true}
    offload: firmware
  frost:
    when: {input: ai/1_01, below: 3, hysteresis: 0.5, for_s: 60}
    if: {time_after: "22:00", time_before: "06:00"}
    then: {output: led/1_01, set: on}
  leak:
    when: {input: di/1_03, counter_rises_by: 50, within_s: 600}
    then: [{output: do/1_02, set: off}, {disable: lamp}]
  dusk:
    when: {at: sunset, offset_min: -15, weekdays: [weekdays]}
    then:
      - {outputs: [led/1_02, led/1_03], set: on}
      - {delay_s: 3600}
      - {outputs: [led/1_02, led/1_03], set: off}
  morning:
    when: {at: "06:30", weekdays: [mon, tue, wed, thu, fri]}
    then: {cover: blind, position: 100}
  board_lost:
    when: {input: modbus_slave/1, quality: offline}
    then: {output: led/1_04, set: on}
`;

describe('automations: config', () => {
  test('the documented shapes load', () => {
    const { config } = load(EXAMPLE);
    assert.deepEqual(config.automations.map((automation) => automation.id), ['stair_light', 'lamp', 'hall_follow', 'frost', 'leak', 'dusk', 'morning', 'board_lost']);
    assert.deepEqual(config.location, { latitude: 50.08, longitude: 14.42, timeZone: 'Europe/Prague' });
    assert.deepEqual(automationReferenceProblems(config, (name) => findModel(name, new Map())), []);
  });

  test('one plain sentence each', () => {
    const { config } = load(EXAMPLE);
    const sentences = config.automations.map(describeAutomation);
    assert.equal(sentences[0], 'stair_light: when di/1_01 rises, do/1_01 on for 180 s (a new rise restarts it)');
    assert.equal(sentences[1], 'lamp: when di/1_02 is pressed briefly (under 0.8 s), toggle do/1_02');
    assert.equal(sentences[2], 'hall_follow: when di/1_04 changes (and at its first good reading), do/1_04 follows di/1_04 [offload: firmware]');
    assert.equal(sentences[3], 'frost: when ai/1_01 falls below 3 for 60 s, again only after passing back by 0.5, if the time is 22:00–06:00, led/1_01 on');
    assert.equal(sentences[5], 'dusk: when it is 15 min before sunset on weekdays, led/1_02 and led/1_03 on, then wait 3600 s, then led/1_02 and led/1_03 off');
  });

  test('mistakes: precise messages with file:line and the key path', () => {
    const found = problems(`
automations:
  a:
    when: {input: di/1_01, edge: sideways}
    then: {output: do/1_01, set: on}
  b:
    when: {input: di/1_01, edge: rising, press: short}
    then: {output: do/1_01, set: on}
  c:
    when: {at: "25:00"}
    then: {output: do/1_01, on_for_s: 100000}
  d:
    when: {at: sunrise}
    then: {output: do/1_01, set: on}
  h:
    when: {input: di/1_01, edge: rising}
    then: {enable: nobody}
  e:
    when: {input: di/1_01, edge: rising}
    then: {output: do/1_01, follow: true}
  f:
    when: {input: di/1_01, edge: rising}
    then: {output: led/1_01, toggle: true}
    offload: firmware
  g:
    when: {input: di/1_01, edge: rising}
`);
    const expect = [
      /:13: automations\.a\.when\.edge: expected one of rising, falling, any, got 'sideways'/,
      /:16: automations\.b\.when: one trigger per automation: edge and press cannot be combined/,
      /:19: automations\.c\.when\.at: expected "HH:MM" \(24-hour, e\.g\. "07:30"\), sunrise or sunset, got '25:00'/,
      /automations\.c\.then\.on_for_s: at most 86400 s/,
      /:22: automations\.d\.when\.at: sunrise needs the controller's place: location: \{latitude/,
      /automations\.h\.then: no automation 'nobody' to enable/,
      /automations\.e\.then: follow needs a trigger on an input's level/,
      /automations\.f\.offload: firmware offload takes one DI and one output/,
      /automations\.g: missing required key 'then'/,
    ];
    for (const pattern of expect) assert.ok(found.some((text) => pattern.test(text)), `${pattern} in:\n${found.join('\n')}`);
  });

  test('references are checked against the configured boards', () => {
    const { config } = load(`
automations:
  a:
    when: {input: di/1_09, edge: rising}
    then: [{output: di/1_02, toggle: true}, {cover: door, command: open}, {output: ro/1_01, set: on}]
`);
    const found = automationReferenceProblems(config, (name) => findModel(name, new Map()));
    assert.equal(found.length, 4, found.join('\n'));
    assert.match(found[0]!, /automations\.a\.when\.input: 'di\/1_09': no di 1_09 on the configured boards, nor an alias of that name/);
    assert.match(found.join('\n'), /'di\/1_02' is a di; only do, ro and led outputs can be switched here/);
    assert.match(found.join('\n'), /no cover 'door' \(covers: blind\)/);
    assert.match(found.join('\n'), /'ro\/1_01': no ro 1_01 on the configured boards/);
  });

  test('aliases resolve through the alias file as for covers and interlocks; one not given yet waits for the daemon', () => {
    writeFileSync(join(dir, 'alias.yaml'), 'version: "2.0"\naliases:\n  button: {circuit: "1_01", devtype: di}\n  lamp: {circuit: "1_02", devtype: do}\n  outside: {circuit: "28AABBCCDD000001", devtype: sensor}\n');
    try {
      const check = (yaml: string) => automationReferenceProblems(load(yaml).config, (name) => findModel(name, new Map()));
      assert.deepEqual(check(`
automations:
  good:
    when: {input: button, edge: rising}
    if: {input: outside, above: 5}
    then: [{output: al_lamp, toggle: true}, {output: do/lamp, set: off}]
  later:
    when: {input: not_given_yet, edge: rising}
    then: {output: lamp, set: on}
`), []);
      const found = check(`
automations:
  bad:
    when: {input: sensor/button, edge: rising}
    then: [{output: button, toggle: true}, {output: outside, set: on}, {output: modbus_slave/1, set: on}]
`);
      assert.equal(found.length, 4, found.join('\n'));
      assert.match(found[0]!, /when\.input: 'sensor\/button': 'button' is a di, not a sensor/);
      assert.match(found[1]!, /then\.output: 'button' is a di; only do, ro and led outputs can be switched here/);
      assert.match(found[2]!, /then\.output: 'outside' is a sensor; only do, ro, led and ao outputs can be set/);
      assert.match(found[3]!, /then\.output: 'modbus_slave\/1' is a modbus_slave; only do, ro, led and ao outputs can be set/);
    } finally {
      rmSync(join(dir, 'alias.yaml'));
    }
  });

  test('--check-config prints the sentences, and refuses an unknown reference', async () => {
    const run = promisify(execFile);
    const { file } = load(EXAMPLE);
    const { stdout } = await run(process.execPath, [BUNDLE, '--check-config', '--config', file]);
    assert.match(stdout, /Automations:\n {2}stair_light: when di\/1_01 rises, do\/1_01 on for 180 s \(a new rise restarts it\)\n/);
    assert.match(stdout, /Configuration OK/);
    const bad = join(dir, 'bad.yaml');
    writeFileSync(bad, `${BOARD}automations:\n  x:\n    when: {input: di/1_07, edge: rising}\n    then: {output: do/1_01, set: on}\n`);
    const failed = await run(process.execPath, [BUNDLE, '--check-config', '--config', bad]).then(() => undefined, (error: { stderr: string; code: number }) => error);
    assert.ok(failed, 'refused');
    assert.match(failed.stderr, /automations\.x\.when\.input: 'di\/1_07': no di 1_07 on the configured boards/);
  });
});
