import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Output } from '../../../src/control/output.js';
import { postForm } from '../../helpers/http.js';
import type { Gate } from '../../helpers/in-process.js';
import { BRAIN_DO, startWatchedGate, type OutputTimeline, type WatchedGate } from '../../helpers/output-timeline.js';

// A write whose answer is lost may still have switched the board: the
// interlock then must not trust the last state it knew. The board is scanned
// only once a second here, so between the lost answer and the partner's write
// only the control layer's read-back can see that the first output is on.

const CONFIG = `
comm_channels:
  SIM:
    type: SIMULATOR
    toggle_ms: 0
    devices:
      1:
        model: "00"
        scan_frequency: 1
interlocks:
  - outputs: [do/1_01, do/1_02]
    dwell_ms: 0
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

test('a member whose write failed after switching the board is read back: its partner stays off (at the board)', async () => {
  const first = gate.runtime.registry.resolve('do', '1_01') as Output;
  const prepare = first.prepareWrite.bind(first);
  // The board switches DO 1 on, but the answer never arrives (a reply lost on the line).
  first.prepareWrite = (raw) => {
    prepare(raw);
    return async () => {
      gate.board.setBit(BRAIN_DO(1).register, BRAIN_DO(1).bit, true);
      throw new Error('the reply was lost');
    };
  };
  const failed = await postForm(`${gate.baseUrl}/rest/do/1_01`, { value: '1' });
  first.prepareWrite = prepare;
  assert.notEqual(failed.status, 200, 'the write failed');
  assert.equal(timeline.isOn('do/1_01'), true, 'the board switched all the same');

  const second = await postForm(`${gate.baseUrl}/rest/do/1_02`, { value: '1' });
  assert.equal(second.status, 409, `the partner is refused: ${JSON.stringify(second.body)}`);
  assert.equal(timeline.isOn('do/1_02'), false, 'do/1_02 stayed off at the board');
});
