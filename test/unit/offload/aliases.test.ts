import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { createLogger } from '../../../src/logging/log.js';
import { startGate, stillBoardYaml, until } from '../../helpers/in-process.js';
import { tempDir } from '../../helpers/temp-dir.js';

// `offload: firmware` for a rule that names its input and output by alias
// (alone, with `al_`, or after the type): the planner finds the board's
// channels behind the aliases as the registry does, so the rule is handed to
// the board's DirectSwitch like one written `type/circuit`; an alias of an
// input used as the output is still refused, with the reason.

/** The Neuron brain section (`00`): DirectSwitch enable, polarity and toggle masks of its DIs. */
const DS_MASKS = 1014;

test('rules naming their points by alias are offloaded to the board; an input alias as the output is refused', { timeout: 30_000 }, async (t) => {
  const dir = tempDir('iogate-offload-aliases-');
  const lines: string[] = [];
  writeFileSync(
    join(dir, 'alias.yaml'),
    'version: "2.0"\naliases:\n  hall_button: {circuit: "1_01", devtype: di}\n  hall_lamp: {circuit: "1_01", devtype: do}\n  porch_button: {circuit: "1_02", devtype: di}\n  porch_lamp: {circuit: "1_02", devtype: do}\n  cellar_button: {circuit: "1_03", devtype: di}\n  cellar_door: {circuit: "1_04", devtype: di}\n',
  );
  const gate = await startGate(`alias_file: ${join(dir, 'alias.yaml')}\nstate_dir: ${dir}\n${stillBoardYaml()}
automations:
  hall:
    when: {input: hall_button}
    then: {output: al_hall_lamp, follow: true}
    offload: firmware
  porch:
    when: {input: di/porch_button, edge: rising}
    then: {output: do/porch_lamp, toggle: true}
    offload: firmware
  cellar:
    when: {input: cellar_button}
    then: {output: cellar_door, follow: true}
    offload: firmware
`, { log: createLogger('INFO', (line) => lines.push(line)) });
  t.after(() => gate.close());
  const state = (id: string) => gate.runtime.registry.resolve('automation', id).full();
  await until(() => state('hall')['offloaded'] === true && state('porch')['offloaded'] === true, 'both alias rules offloaded', 10_000);
  const [enable, polarity, toggle] = gate.board.readRegisters('holding', DS_MASKS, 3)!;
  assert.equal(enable, 0b011, 'DirectSwitch on for DI 1_01 and 1_02, read at the board');
  assert.equal(polarity, 0);
  assert.equal(toggle, 0b010, 'DI 1_02 toggles');
  assert.equal(state('cellar')['offloaded'], false);
  assert.ok(lines.some((line) => /automation:cellar: not offloaded \(cellar_door is not a digital or relay output\)/.test(line)), lines.join('\n'));
});
