import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startBrainsOnFaultyLine } from '../../helpers/bus-rig.js';

// A slave that stops answering goes offline after two failed scans: its
// devices answer 503, /metrics shows it, and it is only probed, with growing
// gaps, so the other slaves on the same line keep their scan rate. When it
// answers a probe again it is back online with fresh values.

test('a silent slave goes offline, is probed with back-off and comes back; its neighbour keeps its rate', async () => {
  const { line, rig } = await startBrainsOnFaultyLine(['1', '2'], { timeoutMs: 60, retries: 1 });
  try {
    assert.equal((await rig.get('/rest/di/2_01')).status, 200);

    line.silent.add(2);
    await rig.whenState('2', 'offline');
    const offline = await rig.get('/rest/di/2_01');
    assert.equal(offline.status, 503);
    assert.match(offline.body, /ModbusSlaveOffline/);
    assert.match(offline.body, /offline/);
    assert.equal((await rig.get('/rest/di/1_01')).status, 200, 'the neighbour stays readable');
    const metrics = (await rig.get('/metrics')).body;
    assert.match(metrics, /iogate_slave_online\{bus="bus1",slave="2",unit="2"\} 0/);
    assert.match(metrics, /iogate_slave_online\{bus="bus1",slave="1",unit="1"\} 1/);
    assert.match(metrics, /iogate_slave_timeouts_total\{bus="bus1",slave="2",unit="2"\} [1-9]/);

    // Watch 1.6 s of probing: probes of the dead slave are single attempts
    // with doubling gaps (0.5 s, 1 s, ...), so only a few reach the line.
    const heardBefore = line.heard.get(2) ?? 0;
    const neighbour = rig.slave('1');
    const scansBefore = neighbour.stats.scans;
    await rig.scans('1', 80);
    const probes = (line.heard.get(2) ?? 0) - heardBefore;
    // Retried probes on every scan would be ~160 requests here; back-off leaves
    // a handful whatever the machine's speed (0.5 s, 1 s, 2 s … apart).
    assert.ok(probes >= 1 && probes <= 4, `the dead slave was probed ${probes} times during 80 scans of its neighbour`);
    assert.ok(neighbour.stats.scans - scansBefore >= 80);

    line.boards.get(2)!.setBit(0, 0, true);
    line.silent.delete(2);
    await rig.whenState('2', 'online');
    const back = await rig.get('/rest/di/2_01');
    assert.equal(back.status, 200);
    assert.equal(JSON.parse(back.body).value, 1);
  } finally {
    await rig.stop();
  }
});
