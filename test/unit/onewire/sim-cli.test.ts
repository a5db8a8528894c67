import assert from 'node:assert/strict';
import { test } from 'node:test';
import { OwserverClient, tcpDialer } from '../../../src/owserver/client.js';
import { startSim } from '../../helpers/sim-process.js';

// iogate-sim --owserver: simulated 1-Wire devices served with the owserver
// protocol on a TCP port, alone or beside simulated Modbus boards.

test('iogate-sim --owserver serves simulated devices that an owserver client can list and read', async () => {
  const sim = await startSim(['--owserver', '127.0.0.1:0', '--ow-devices', '28,26,29']);
  try {
    assert.ok(sim.tcpPort);
    const client = new OwserverClient({ dial: tcpDialer('127.0.0.1', sim.tcpPort), timeoutMs: 2000, where: 'sim' });
    const entries = await client.dirall('/');
    assert.deepEqual(entries.map((entry) => entry.slice(1, 3)), ['28', '26', '29']);
    assert.equal(await client.read(`${entries[0]}/type`), 'DS18B20');
    const temperature = await client.readNumber(`${entries[0]}/temperature`);
    assert.ok(temperature > 15 && temperature < 30);
    assert.match(await client.read(`${entries[2]}/sensed.ALL`), /^[01](,[01]){7}$/);
  } finally {
    await sim.stop();
  }
});

test('iogate-sim refuses an unknown 1-Wire family with a usage error', async () => {
  await assert.rejects(startSim(['--owserver', '127.0.0.1:0', '--ow-devices', '28,77']), /--ow-devices: no simulated 1-Wire device for family 77/);
});
