import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { stillBoardYaml, until, type Gate } from '../../helpers/in-process.js';
import { BRAIN_DO, startWatchedGate, type OutputTimeline, type WatchedGate } from '../../helpers/output-timeline.js';

// A cover's motor output that comes on while the cover is not running it (a
// write that went round iogate, a board that restored an old state) must be
// switched off: nothing moves by itself. Judged at the simulated board.

const CONFIG = `${stillBoardYaml()}covers:
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
  watched = await startWatchedGate(CONFIG, [BRAIN_DO(1), BRAIN_DO(2)]);
  ({ gate, timeline } = watched);
});

after(async () => {
  await watched?.stop();
});

test('a cover output switched on behind its back is switched off at the board', async () => {
  gate.board.setBit(BRAIN_DO(2).register, BRAIN_DO(2).bit, true);
  assert.equal(timeline.isOn('do/1_02'), true);
  await until(() => !timeline.isOn('do/1_02'), 'do/1_02 switched off by the daemon');
  assert.equal(timeline.isOn('do/1_01'), false, 'and the other motor output was not switched on');
});
