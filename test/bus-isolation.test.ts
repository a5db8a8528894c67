import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Socket } from 'node:net';
import { brain00 } from '../src/boards/builtin/neuron.js';
import { TcpLink } from '../src/transport/tcp-link.js';
import { startRig } from './helpers/bus-rig.js';
import { FaultyLine } from './helpers/faulty-line.js';

// EVOK#190: a failing line must not hold up anything else. Here one bus talks
// to a TCP peer that accepts connections but never answers; while its slave
// times out and a write to it hangs for its full timeout, the other bus keeps
// its scan rate and the HTTP API (reads and writes on the healthy bus) stays
// fast.
//
// Thresholds are set against the dead bus's 300 ms timeout rather than tight
// absolute figures, so the test holds on a loaded machine: anything that had
// to wait for the dead bus would take at least 300 ms, and a healthy bus held
// up by it would scan hardly at all during the hang.

test('a bus whose peer never answers delays neither the other bus nor the HTTP API', async () => {
  const sockets = new Set<Socket>();
  const blackHole = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
  });
  blackHole.listen(0, '127.0.0.1');
  await once(blackHole, 'listening');
  const port = (blackHole.address() as { port: number }).port;
  const healthy = new FaultyLine([{ unit: 1, model: brain00 }]);
  const rig = await startRig([
    { link: new TcpLink('127.0.0.1', port), slaves: [{ name: 'dead', unit: 1, model: brain00 }], options: { timeoutMs: 300, retries: 1 } },
    { link: healthy, slaves: [{ name: '2', unit: 1, model: brain00, periodMs: 20 }] },
  ]);
  try {
    await rig.whenState('2', 'online');
    const good = rig.slave('2');
    const scansBefore = good.stats.scans;
    const started = performance.now();

    const hanging = rig.post('/rest/do/dead_01', { value: '1' });
    const latencies: number[] = [];
    for (let i = 0; i < 20; i++) {
      const t0 = performance.now();
      const reply = await rig.get('/rest/di/2_01');
      latencies.push(performance.now() - t0);
      assert.equal(reply.status, 200);
    }
    const t0 = performance.now();
    const write = await rig.post('/rest/do/2_01', { value: '1' });
    const writeMs = performance.now() - t0;
    assert.equal(write.status, 200);
    assert.equal(healthy.boards.get(1)!.get('holding', 1) & 1, 1);

    const failed = await hanging;
    const hangMs = performance.now() - started;
    assert.equal(failed.status, 504);
    assert.ok(hangMs >= 550 && hangMs < 1500, `the dead write took two 300 ms attempts (${hangMs.toFixed(0)} ms)`);
    const scans = good.stats.scans - scansBefore;
    const expected = hangMs / 20;
    assert.ok(scans >= expected * 0.6, `healthy bus kept 50 Hz: ${scans} scans in ${hangMs.toFixed(0)} ms`);
    assert.ok(Math.max(...latencies) < 150, `GET latencies stayed low: max ${Math.max(...latencies).toFixed(1)} ms`);
    assert.ok(writeMs < 150, `write on the healthy bus took ${writeMs.toFixed(1)} ms`);
  } finally {
    await rig.stop();
    for (const socket of sockets) socket.destroy();
    blackHole.close();
  }
});
