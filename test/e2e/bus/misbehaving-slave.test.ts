import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startBrainsOnFaultyLine } from '../../helpers/bus-rig.js';

// A slave whose replies come after its timeout, or carry another unit id, is
// caught by those replies themselves (not after two silent scans), made
// offline and probed with back-off; its neighbour keeps scanning, and nothing
// is reported written that was not.

const DO_REGISTER = 1;

/** A good slave (unit 1) and a bad one (unit 2) on one in-memory line. */
function rigWith(timeoutMs: number) {
  return startBrainsOnFaultyLine(['good', 'bad'], { timeoutMs, retries: 1 });
}

test('a slave answering after its timeout is offline from its second late reply; writes to it fail at once; its neighbour scans on', async () => {
  const timeoutMs = 60;
  const { line, rig } = await rigWith(timeoutMs);
  try {
    await rig.whenState('bad', 'online');
    // Late by more than a loaded test machine stalls: the bus reads a reply already waiting before it
    // times a request out (a stall of our own is never blamed on the slave), so a reply only 50 ms
    // late can pass as on time while the test runner is starved. bench/faults.mjs measures 50 ms.
    line.replyDelayMs.set(2, timeoutMs + 400);
    // A write racing the detection: whatever it reports must be what the slave did.
    const racing = await rig.post('/rest/do/bad_01', { value: '1' });
    const applied = (line.boards.get(2)!.get('holding', DO_REGISTER) & 1) === 1;
    if (racing.status === 200) assert.ok(applied, 'reported written, so it was');
    else assert.ok([502, 503, 504].includes(racing.status), `refused as failed or unknown, got ${racing.status}`);
    await rig.whenState('bad', 'offline');
    const bad = rig.slave('bad');
    assert.match(bad.lastError, /answered \d+ ms after its 60 ms timeout/);
    assert.ok(rig.buses[0]!.unitStats(2).lateReplies >= 1);
    assert.ok(rig.logs.some((line) => /'bad'.*is offline: it answered \d+ ms after its 60 ms timeout; probing it with back-off from 10 s/.test(line)));
    // Offline: a write is refused before the line, and nothing goes on the wire.
    const heard = line.heardWrites.get(2) ?? 0;
    const refused = await rig.post('/rest/do/bad_02', { value: '1' });
    assert.equal(refused.status, 503);
    assert.equal(line.heardWrites.get(2) ?? 0, heard, 'nothing sent');
    // The neighbour keeps scanning, and its values stay its own.
    await rig.scans('good', 10);
    assert.equal(rig.slave('good').state, 'online', rig.logs.join('\n'));
    const metrics = (await rig.get('/metrics')).body;
    assert.match(metrics, /iogate_slave_late_replies_total\{bus="bus1",slave="bad",unit="2"\} [1-9]/);
  } finally {
    await rig.stop();
  }
});

test('a slave answering with another unit id fails that attempt at once, not after its timeout; it is offline, and back once it answers right', async () => {
  // Far longer than the test: every attempt that waited for it would stall everything.
  const timeoutMs = 60_000;
  const { line, rig } = await rigWith(timeoutMs);
  try {
    await rig.whenState('bad', 'online');
    line.wrongUnit.set(2, 77);
    await rig.whenState('bad', 'offline');
    const bad = rig.slave('bad');
    assert.equal(bad.lastError, 'answered with unit id 77');
    assert.ok(rig.buses[0]!.unitStats(2).misaddressedReplies >= 1);
    assert.equal(rig.buses[0]!.unitStats(2).timeouts, 0, 'no attempt waited out its timeout');
    await rig.scans('good', 10);
    assert.equal(rig.slave('good').state, 'online');
    // Fixed: the next probe (within the 10 s back-off) brings it back.
    line.wrongUnit.delete(2);
    await rig.whenState('bad', 'online');
    assert.equal((await rig.post('/rest/do/bad_01', { value: '1' })).status, 200);
    assert.equal(line.boards.get(2)!.get('holding', DO_REGISTER) & 1, 1);
  } finally {
    await rig.stop();
  }
});
