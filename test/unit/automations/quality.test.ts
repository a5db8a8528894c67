import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import type { SimulatedBoard } from '../../../src/sim/simulated-board.js';
import { startGate, stillBoardYaml, until } from '../../helpers/in-process.js';
import { BRAIN_LED, OutputTimeline } from '../../helpers/output-timeline.js';
import { tempDir } from '../../helpers/temp-dir.js';

// A quality trigger end to end: a second board falls silent, an automation
// lights a LED on the first; when it is back, another switches it off.

test('a board going offline and coming back triggers the quality automations, once each', async () => {
  const dir = tempDir('iogate-automation-quality-');
  const gate = await startGate(`alias_file: ${join(dir, 'alias.yaml')}\n${stillBoardYaml({ devices: '      2:\n        model: "01"\n        slave-id: 2\n' })}
automations:
  board_lost:
    when: {input: modbus_slave/2, quality: offline}
    then: {output: led/1_01, set: on}
  board_back:
    when: {input: modbus_slave/2, quality: good}
    then: {output: led/1_01, set: off}
`);
  const timeline = new OutputTimeline(gate.board, [BRAIN_LED(1)]);
  try {
    const second = [...gate.runtime.simulations.values()][0]!.boards.get(2) as SimulatedBoard;
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(timeline.isOn('led/1_01'), false, 'a good board at start-up is not a change');
    second.silent = true;
    await until(() => timeline.isOn('led/1_01'), 'the LED on when board 2 is offline', 8000);
    second.silent = false;
    await until(() => !timeline.isOn('led/1_01'), 'the LED off when it is back', 8000);
    const runs = gate.runtime.automations.list().map((view) => [view.id, view.runs]);
    assert.deepEqual(runs, [['board_lost', 1], ['board_back', 1]]);
  } finally {
    timeline.stop();
    await gate.close();
  }
});
