import assert from 'node:assert/strict';
import { mkdirSync, rmdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { postForm } from '../../helpers/http.js';
import { startGate, stillBoardYaml } from '../../helpers/in-process.js';
import { BRAIN_DO, OutputTimeline } from '../../helpers/output-timeline.js';
import { tempDir } from '../../helpers/temp-dir.js';

// A pulse is noted in the state directory before its output goes on, so the
// restart after a crash switches the output off. A note that cannot be
// written (state directory read-only or full) used to be logged and the
// pulse run anyway: 200, and after a SIGKILL the relay stayed on for good.
// It is refused now, like an alias that cannot be saved, and nothing switches.

test('a pulse that cannot be noted in the state directory is refused with 507, and the output stays off at the board', async () => {
  const stateDir = tempDir('iogate-pulse-note-');
  const gate = await startGate(`
alias_file: ${join(stateDir, 'alias.yaml')}
${stillBoardYaml()}`);
  const timeline = new OutputTimeline(gate.board, [BRAIN_DO(1)]);
  // The atomic write's temporary file cannot be created: as a read-only or
  // full file system fails it (root ignores permissions, so a mode would not).
  const blocker = join(stateDir, '.outputs.json.tmp');
  mkdirSync(blocker);
  try {
    const refused = await postForm(`${gate.baseUrl}/rest/do/1_01`, { value: '1', pulse_ms: '60000' });
    assert.equal(refused.status, 507, JSON.stringify(refused.body));
    assert.equal(refused.body['success'], false);
    assert.match(JSON.stringify(refused.body['errors']), /pulse refused/);
    assert.equal(timeline.isOn('do/1_01'), false, 'the output never went on');
    assert.equal(timeline.samples.some(({ on }) => on[0]), false, 'not even for a moment');

    // Once the directory takes writes again, pulses run.
    rmdirSync(blocker);
    const accepted = await postForm(`${gate.baseUrl}/rest/do/1_01`, { value: '1', pulse_ms: '60000' });
    assert.equal(accepted.status, 200);
    assert.equal(timeline.isOn('do/1_01'), true);
  } finally {
    timeline.stop();
    await gate.close();
  }
});
