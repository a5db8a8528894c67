import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { brain00 } from '../../../src/boards/builtin/neuron.js';
import { Simulation } from '../../../src/sim/simulation.js';
import { modbusTcpServer } from '../../../src/sim/tcp-server.js';
import { TcpLink } from '../../../src/transport/tcp-link.js';
import { startRig } from '../../helpers/bus-rig.js';
import { FaultyProxy } from '../../helpers/faulty-proxy.js';

// On Modbus TCP a reply is matched to its request by the transaction id, and
// the unit id must match too: a gateway that answers a request with the right
// transaction id but another unit id (it mixed up its slaves) has not given
// the answer of the slave asked. Such a reply is never taken as that answer:
// a write is not reported done on its strength, and the slave's counters see
// no response.

const DO_REGISTER = 1;

test('a Modbus TCP reply with the right transaction id but another unit id is not the answer: the write is not reported done', async () => {
  const simulation = new Simulation(
    [
      { unit: 1, model: brain00 },
      { unit: 2, model: brain00 },
    ],
    0,
  );
  const server = modbusTcpServer(simulation.boards);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const proxy = await FaultyProxy.start({ host: '127.0.0.1', port: (server.address() as AddressInfo).port });
  const rig = await startRig([
    {
      link: new TcpLink('127.0.0.1', proxy.port),
      slaves: [
        { name: 'good', unit: 1, model: brain00, periodMs: 50 },
        { name: 'bad', unit: 2, model: brain00, periodMs: 50 },
      ],
      options: { timeoutMs: 300, retries: 1 },
    },
  ]);
  try {
    await rig.whenState('good', 'online');
    await rig.whenState('bad', 'online');
    const answered = rig.buses[0]!.unitStats(2).responses;
    proxy.wrongUnit.set(2, 77);
    const write = await rig.post('/rest/do/bad_01', { value: '1' });
    // The gateway passed the write on (unless a scan found the slave offline first: 503, nothing sent);
    // only its answer is wrong, so iogate cannot say it was done.
    if (write.status !== 503) assert.equal((simulation.boards.get(2)!.get('holding', DO_REGISTER) & 1) === 1, true, 'the write reached board 2');
    assert.notEqual(write.status, 200, `a reply claiming unit 77 was taken as unit 2's: ${write.body}`);
    assert.ok([502, 503, 504].includes(write.status), `refused as failed or unknown, got ${write.status}`);
    assert.equal(rig.buses[0]!.unitStats(2).responses, answered, 'no reply of unit 2 counted');
    await rig.whenState('bad', 'offline');
    // The neighbour's replies are its own: it keeps scanning online.
    await rig.scans('good', 3);
    assert.equal(rig.slave('good').state, 'online');
  } finally {
    await rig.stop();
    await proxy.stop();
    server.close();
  }
});
