import { test } from 'node:test';
import assert from 'node:assert/strict';
import { brain00 } from '../../../src/boards/builtin/neuron.js';
import { FaultyLine } from '../../helpers/faulty-line.js';
import { startRig } from '../../helpers/bus-rig.js';

// EVOK#192: a board that is switched off when the daemon starts never got its
// devices in EVOK. Here its devices exist from the start (503 while it is
// offline) and carry live values as soon as it first answers.

test('a slave absent at start has its devices registered and comes online when it first answers', async () => {
  const line = new FaultyLine([{ unit: 1, model: brain00 }]);
  line.silent.add(1);
  const rig = await startRig([{ link: line, slaves: [{ name: '1', unit: 1, model: brain00 }], options: { timeoutMs: 50 } }]);
  try {
    await rig.whenState('1', 'offline');
    assert.ok(rig.registry.list('di').length > 0, 'devices are registered without a single answer');
    const listed = JSON.parse((await rig.get('/rest/di/all')).body) as Array<{ circuit: string }>;
    assert.deepEqual(listed.map((d) => d.circuit), ['1_01', '1_02', '1_03', '1_04']);
    assert.equal((await rig.get('/rest/do/1_02')).status, 503);

    line.boards.get(1)!.setBit(1, 1, true);
    line.silent.delete(1);
    await rig.whenState('1', 'online');
    const output = await rig.get('/rest/do/1_02');
    assert.equal(output.status, 200);
    assert.equal(JSON.parse(output.body).value, 1);
  } finally {
    await rig.stop();
  }
});

test('a read-once slave (scan_enabled: false) absent at start is read once it answers, then left alone', async () => {
  const line = new FaultyLine([{ unit: 1, model: brain00 }]);
  line.silent.add(1);
  const rig = await startRig([
    { link: line, slaves: [{ name: '1', unit: 1, model: brain00, scanEnabled: false }], options: { timeoutMs: 50, retries: 0 } },
  ]);
  try {
    await rig.whenState('1', 'offline');
    line.boards.get(1)!.setBit(1, 2, true);
    line.silent.delete(1);
    await rig.whenState('1', 'online');
    const output = await rig.get('/rest/do/1_03');
    assert.equal(output.status, 200);
    assert.equal(JSON.parse(output.body).value, 1);
    // Read once: after that first good scan nothing polls it any more.
    const heard = line.heard.get(1) ?? 0;
    // Absence of traffic can only be shown by waiting: 300 ms is 15 scan periods.
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(line.heard.get(1) ?? 0, heard, 'no further polls after the one successful read');
  } finally {
    await rig.stop();
  }
});
