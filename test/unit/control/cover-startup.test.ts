import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { createLogger } from '../../../src/logging/log.js';
import type { SimulatedBoard } from '../../../src/sim/simulated-board.js';
import { startGate, stillBoardYaml, until } from '../../helpers/in-process.js';
import { BRAIN_DO, startWatchedGate } from '../../helpers/output-timeline.js';
import { tempDir } from '../../helpers/temp-dir.js';

// A cover's outputs at start-up, judged at the simulated board: an output
// found on with no command from this run is switched off, and a cover saved
// as moving (iogate was killed mid-run) has an off written to both of its
// outputs, whatever they read, before anything else happens to them.

const config = (dir: string) => `
alias_file: ${join(dir, 'alias.yaml')}
${stillBoardYaml({ errorReplies: true })}covers:
  blind:
    up: do/1_03
    down: do/1_04
    travel_up_s: 1.0
    travel_down_s: 0.8
    dwell_ms: 100
`;

const UP = BRAIN_DO(3);
const DOWN = BRAIN_DO(4);

/** The coil a DO of the Neuron brain board is written through. */
function doCoil(board: SimulatedBoard, n: number): number {
  const feature = board.model.features.find((f) => f.type === 'DO');
  if (!feature || feature.type !== 'DO') throw new Error('the test board has no DO');
  return feature.val_coil + n - 1;
}

test('a cover output already on at the board before start-up is switched off, and the log says why', async () => {
  const dir = tempDir('iogate-cover-found-on-');
  const lines: string[] = [];
  const { timeline, stop } = await startWatchedGate(config(dir), [UP, DOWN], {
    log: createLogger('WARNING', (line) => lines.push(line)),
    // On since before iogate started (a crash mid-run, another master): nothing of this run commanded it.
    beforeStart: (board) => board.setBit(UP.register, UP.bit, true),
  });
  try {
    await until(() => !timeline.isOn('do/1_03'), 'the up output to be off at the board', 5000);
    assert.ok(lines.some((line) => /cover blind: do 1_03 found on at start-up with no command from this run; switched off/.test(line)), lines.join('\n'));
    assert.equal(timeline.isOn('do/1_04'), false);
  } finally {
    await stop();
  }
});

test('a cover saved as moving gets an off written to both outputs at start-up, even ones that read off', async () => {
  const dir = tempDir('iogate-cover-moving-');
  writeFileSync(join(dir, 'outputs.json'), JSON.stringify({ pulses: {}, covers: { blind: { position: 37, tilt: 0, moving: true } } }));
  const offsWritten = new Set<number>();
  let coils: { up: number; down: number } | undefined;
  const gate = await startGate(config(dir), {
    beforeStart: (board) => {
      coils = { up: doCoil(board, 3), down: doCoil(board, 4) };
      const writeCoils = board.writeCoils.bind(board);
      board.writeCoils = (address, values) => {
        values.forEach((on, i) => {
          if (!on) offsWritten.add(address + i);
        });
        return writeCoils(address, values);
      };
    },
  });
  try {
    await until(() => offsWritten.has(coils!.up) && offsWritten.has(coils!.down), 'an off written to both outputs of the cover at the board', 5000);
    assert.equal(((gate.board.get('holding', UP.register) >> UP.bit) & 1) | ((gate.board.get('holding', DOWN.register) >> DOWN.bit) & 1), 0);
  } finally {
    await gate.close();
  }
});
