import assert from 'node:assert/strict';
import { test } from 'node:test';
import { postForm } from '../../helpers/http.js';
import { STILL_BOARD, startGate } from '../../helpers/in-process.js';
import { BRAIN_DO, OutputTimeline } from '../../helpers/output-timeline.js';

// A clean stop must not leave a pulse's output on: nothing would switch it
// off until the next start. Judged at the simulated board after the stop.

test('a clean stop ends a running pulse: its output is off at the board', async () => {
  const gate = await startGate(STILL_BOARD);
  const timeline = new OutputTimeline(gate.board, [BRAIN_DO(1)]);
  try {
    const reply = await postForm(`${gate.baseUrl}/rest/do/1_01`, { value: '1', pulse_ms: '600000' });
    assert.equal(reply.status, 200);
    assert.equal(timeline.isOn('do/1_01'), true, 'the pulse is running');
  } finally {
    await gate.close();
  }
  assert.equal(timeline.isOn('do/1_01'), false, 'switched off by the stop, not left on for ten minutes');
  timeline.stop();
});
