import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Socket } from 'node:net';
import { brain00 } from '../../../src/boards/builtin/neuron.js';
import { TcpLink } from '../../../src/transport/tcp-link.js';
import { startRig } from '../../helpers/bus-rig.js';
import { FaultyLine } from '../../helpers/faulty-line.js';

// EVOK#190: a failing line must not hold up anything else. Here one bus talks
// to a TCP peer that accepts connections but never answers; while its slave
// times out and a write to it hangs for its full timeout, the other bus keeps
// its scan rate and the HTTP API (reads and writes on the healthy bus) stays
// fast.
//
// The checks are about order, not speed, so they hold on a loaded machine:
// everything on the healthy bus must finish while the dead bus's write is still
// hanging (anything that waited for the dead bus would finish after it).

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

    let hangingSettled = false;
    const hanging = rig.post('/rest/do/dead_01', { value: '1' }).finally(() => (hangingSettled = true));
    for (let i = 0; i < 20; i++) assert.equal((await rig.get('/rest/di/2_01')).status, 200);
    const write = await rig.post('/rest/do/2_01', { value: '1' });
    assert.equal(write.status, 200);
    assert.equal(healthy.boards.get(1)!.get('holding', 1) & 1, 1);
    // The healthy bus keeps scanning while the dead one waits out its timeouts.
    await Promise.race([rig.afterScanWhen('2', () => good.stats.scans - scansBefore >= 5), hanging]);
    assert.equal(hangingSettled, false, 'reads, a write and five scans on the healthy bus all finished during the hang');

    const failed = await hanging;
    assert.equal(failed.status, 504);
    assert.ok(performance.now() - started >= 550, 'the dead write was given both 300 ms attempts');
  } finally {
    await rig.stop();
    for (const socket of sockets) socket.destroy();
    blackHole.close();
  }
});
