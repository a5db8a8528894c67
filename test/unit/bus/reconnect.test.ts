import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { once } from 'node:events';
import { brain00 } from '../../../src/boards/builtin/neuron.js';
import { Simulation } from '../../../src/sim/simulation.js';
import { modbusTcpServer } from '../../../src/sim/tcp-server.js';
import { TcpLink } from '../../../src/transport/tcp-link.js';
import type { Rig } from '../../helpers/bus-rig.js';
import { startRig } from '../../helpers/bus-rig.js';
import { FaultyLine } from '../../helpers/faulty-line.js';

// A line that goes away (USB adapter pulled, gateway rebooted, TCP peer
// closing) is reopened with back-off; once it is back the slaves resume and
// show what changed meanwhile.

function di1Value(rig: Rig): () => boolean {
  return () => rig.registry.resolve('di', '1_01').full()['value'] === 1;
}

test('a vanished serial device (in memory) is reopened with back-off and the slave resumes', async () => {
  const line = new FaultyLine([{ unit: 1, model: brain00 }]);
  const rig = await startRig([{ link: line, slaves: [{ name: '1', unit: 1, model: brain00 }] }]);
  try {
    await rig.whenState('1', 'online');
    line.refuseOpen = true;
    line.vanish();
    await rig.whenState('1', 'offline');
    assert.equal(rig.buses[0]!.isConnected, false);
    const refusedReconnects = rig.buses[0]!.stats().reconnects;
    assert.ok(refusedReconnects >= 1);
    assert.equal((await rig.get('/rest/di/1_01')).status, 503);
    const metrics = (await rig.get('/metrics')).body;
    assert.match(metrics, /iogate_bus_connected\{bus="bus1"\} 0/);
    assert.match(metrics, /iogate_bus_reconnects_total\{bus="bus1"\} [1-9]/);

    line.boards.get(1)!.setBit(0, 0, true);
    line.refuseOpen = false;
    await rig.whenState('1', 'online');
    assert.ok(line.opens >= 2);
    await rig.afterScanWhen('1', di1Value(rig));
    assert.equal(JSON.parse((await rig.get('/rest/di/1_01')).body).value, 1);
  } finally {
    await rig.stop();
  }
});

test('a TCP peer dropping the connection or restarting is reconnected and polling resumes', async () => {
  const simulation = new Simulation([{ unit: 1, model: brain00 }], 0);
  const board = simulation.boards.get(1)!;
  let server = modbusTcpServer(simulation.boards);
  const sockets = new Set<Socket>();
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  };
  server.on('connection', track);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as { port: number }).port;
  const rig = await startRig([
    { link: new TcpLink('127.0.0.1', port), slaves: [{ name: '1', unit: 1, model: brain00 }], options: { timeoutMs: 100 } },
  ]);
  const bus = rig.buses[0]!;
  try {
    await rig.whenState('1', 'online');

    // The peer drops the connection.
    for (const socket of sockets) socket.destroy();
    board.setBit(0, 0, true);
    await rig.afterScanWhen('1', di1Value(rig));
    assert.ok(bus.stats().reconnects >= 1, 'reconnected after the drop');

    // The peer goes away altogether and comes back on the same port.
    server.close();
    for (const socket of sockets) socket.destroy();
    await rig.whenState('1', 'offline');
    board.setBit(0, 0, false);
    server = modbusTcpServer(simulation.boards);
    server.on('connection', track);
    server.listen(port, '127.0.0.1');
    await once(server, 'listening');
    await rig.whenState('1', 'online');
    await rig.afterScanWhen('1', () => rig.registry.resolve('di', '1_01').full()['value'] === 0);
  } finally {
    await rig.stop();
    server.close();
    for (const socket of sockets) socket.destroy();
  }
});
