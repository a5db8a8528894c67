import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { brain00 } from '../../src/boards/builtin/neuron.js';
import { rtuResponder } from '../../src/sim/rtu-responder.js';
import { Simulation } from '../../src/sim/simulation.js';
import { SerialLink } from '../../src/transport/serial-link.js';
import type { Rig } from '../helpers/bus-rig.js';
import { startRig } from '../helpers/bus-rig.js';
import { startPtyPair } from '../helpers/pty-pair.js';
import { tempDir } from '../helpers/temp-dir.js';

// A real serial device that goes away: socat's pty pair is the cable, and
// stopping socat unplugs it, as pulling a USB-RS485 adapter does.

function di1Value(rig: Rig): () => boolean {
  return () => rig.registry.resolve('di', '1_01').full()['value'] === 1;
}

test('a serial port whose device vanishes (socat pty pair) is reopened when it reappears', async () => {
  const dir = tempDir('iogate-pty-');
  const [slavePath, masterPath] = [join(dir, 'slave'), join(dir, 'master')];
  let cable = await startPtyPair(slavePath, masterPath);
  const simulation = new Simulation([{ unit: 1, model: brain00 }], 0);
  const settings = { baudrate: 19200, parity: 'N', stopbits: 1 } as const;
  // The simulated slave on the far end reopens its own port whenever it can.
  const slaveLink = new SerialLink({ path: slavePath, ...settings });
  let slaveClosed = Promise.resolve();
  const openSlave = async () => {
    let closed!: () => void;
    slaveClosed = new Promise((resolve) => (closed = resolve));
    await slaveLink.open({ data: rtuResponder(simulation.boards, (frame) => slaveLink.write(frame)), closed });
  };
  await openSlave();
  const rig = await startRig([
    {
      link: new SerialLink({ path: masterPath, ...settings }),
      slaves: [{ name: '1', unit: 1, model: brain00, periodMs: 50 }],
      options: { timeoutMs: 200, reconnectMs: 50, maxReconnectMs: 400 },
    },
  ]);
  try {
    await rig.whenState('1', 'online');
    await cable.stop();
    await slaveClosed;
    await rig.whenState('1', 'offline');
    assert.equal(rig.buses[0]!.isConnected, false);
    assert.ok(rig.buses[0]!.stats().reconnects >= 1);

    simulation.boards.get(1)!.setBit(0, 0, true);
    cable = await startPtyPair(slavePath, masterPath);
    await openSlave();
    await rig.whenState('1', 'online');
    await rig.afterScanWhen('1', di1Value(rig));
  } finally {
    await rig.stop();
    await slaveLink.close();
    await cable.stop();
  }
});
