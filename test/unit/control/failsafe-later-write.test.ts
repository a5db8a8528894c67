import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createLogger } from '../../../src/logging/log.js';
import type { SimulatedBoard } from '../../../src/sim/simulated-board.js';
import { postForm } from '../../helpers/http.js';
import { startGate, stillBoardYaml, until } from '../../helpers/in-process.js';
import { BRAIN_DO, OutputTimeline } from '../../helpers/output-timeline.js';
import { tempDir } from '../../helpers/temp-dir.js';
import { join } from 'node:path';

// A fail-safe off that did not land (here: the board refuses the off with an
// exception) is retried every second; a client's write to the output in
// between takes over: the retry is cancelled, never replayed over the
// client's on. Judged at the simulated board.
//
// "Past the retry" without a sleep: a second output's off is refused the same
// way, starting after the first output's retry was armed. Retries share one
// period, and Node fires timers of one period in the order they were armed,
// so once the board has heard the second output's first retry, the first
// output's retry (had it not been cancelled) has already gone on the wire.

/** The coil a DO of the Neuron brain board is written through. */
function doCoil(board: SimulatedBoard, n: number): number {
  const feature = board.model.features.find((f) => f.type === 'DO');
  if (!feature || feature.type !== 'DO') throw new Error('the test board has no DO');
  return feature.val_coil + n - 1;
}

test("a client's write cancels a fail-safe off still being retried: the output stays on at the board past the retry", async () => {
  const dir = tempDir('iogate-failsafe-later-');
  const lines: string[] = [];
  /** Coils whose off writes the board refuses (an exception), and how many such offs it heard. */
  const refuseOff = new Set<number>();
  const refusedOffs = new Map<number, number>();
  const gate = await startGate(`alias_file: ${join(dir, 'alias.yaml')}\n${stillBoardYaml({ errorReplies: true })}`, {
    log: createLogger('WARNING', (line) => lines.push(line)),
    beforeStart: (board) => {
      const writeCoils = board.writeCoils.bind(board);
      board.writeCoils = (address, values) => {
        if (values.length === 1 && values[0] === false && refuseOff.has(address)) {
          refusedOffs.set(address, (refusedOffs.get(address) ?? 0) + 1);
          return false;
        }
        return writeCoils(address, values);
      };
    },
  });
  const timeline = new OutputTimeline(gate.board, [BRAIN_DO(1), BRAIN_DO(2)]);
  const first = doCoil(gate.board, 1);
  const clock = doCoil(gate.board, 2);
  try {
    refuseOff.add(first);
    assert.equal((await postForm(`${gate.baseUrl}/rest/do/1_01`, { value: '1', pulse_ms: '100' })).status, 200);
    const onFrom = timeline.samples.length - 1;
    await until(() => lines.some((line) => /do 1_01: switching it off failed .* trying again every 1 s/.test(line)), "the pulse's off to fail and be retried", 10_000);
    assert.equal(timeline.isOn('do/1_01'), true, 'the refused off left it on');
    // The client's on, before the next retry: it takes over.
    assert.equal((await postForm(`${gate.baseUrl}/rest/do/1_01`, { value: '1' })).status, 200);
    refuseOff.delete(first);
    assert.equal(timeline.isOn('do/1_01'), true);

    // The clock: an off of do/1_02 refused from now on, so its retries run one period behind.
    refuseOff.add(clock);
    assert.equal((await postForm(`${gate.baseUrl}/rest/do/1_02`, { value: '1', pulse_ms: '50' })).status, 200);
    await until(() => (refusedOffs.get(clock) ?? 0) >= 2, "do/1_02's off and its first retry to reach the board", 10_000);
    assert.equal(timeline.isOn('do/1_01'), true, "the cancelled retry switched do/1_01 off over the client's on");
    assert.equal(
      timeline.samples.slice(onFrom).some(({ on }) => !on[0]),
      false,
      'do/1_01 never went off at the board',
    );
  } finally {
    refuseOff.clear();
    timeline.stop();
    await gate.close();
  }
});
