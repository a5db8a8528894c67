import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { brain00 } from '../../src/boards/builtin/neuron.js';
import { SerialLink } from '../../src/transport/serial-link.js';
import { TcpLink } from '../../src/transport/tcp-link.js';
import { startRig } from '../helpers/bus-rig.js';
import { FaultyProxy } from '../helpers/faulty-proxy.js';
import { startPtyPair } from '../helpers/pty-pair.js';
import { freePort } from './free-port.js';
import { startPymodbus } from './peers/pymodbus-peer.js';
import { tempDir } from '../helpers/temp-dir.js';

// Bus faults against real peers: a serial port whose pty vanishes (socat
// killed) and an independent Modbus TCP slave (pymodbus) behind a proxy that
// loses replies.

test('a serial port whose pty peer vanishes closes every time instead of spinning in its read loop', { timeout: 30_000 }, async () => {
  // serialport 12's read retried end-of-file at once, for ever, in about half
  // of these rounds (a core busy and memory growing); the link's guard turns
  // end-of-file into a close. Without it this test hangs into its timeout.
  const dir = tempDir('iogate-vanish-');
  const reasons: string[] = [];
  for (let round = 0; round < 8; round++) {
    const cable = await startPtyPair(join(dir, `a${round}`), join(dir, `b${round}`));
    const link = new SerialLink({ path: cable.b, baudrate: 19200, parity: 'N', stopbits: 1 });
    let reportClosed!: (reason: string) => void;
    const closed = new Promise<string>((resolve) => (reportClosed = resolve));
    await link.open({ data: () => {}, closed: reportClosed });
    // At once, as the port's first read starts: the race that lost most often.
    cable.child.kill('SIGKILL');
    reasons.push(await closed);
    await link.close();
  }
  assert.equal(reasons.length, 8);
  for (const reason of reasons) assert.match(reason, /^serial port .*b\d: /);
});

test('a pymodbus slave behind a link that loses 30 % of its replies stays degraded and keeps updating', async (t) => {
  const port = await freePort();
  const peer = await startPymodbus(['--tcp', String(port), '--set', '0=5']);
  t.after(() => peer.stop());
  const proxy = await FaultyProxy.start({ host: '127.0.0.1', port });
  t.after(() => proxy.stop());
  proxy.lossy.set(1, 0.3);
  const rig = await startRig([
    {
      link: new TcpLink('127.0.0.1', proxy.port),
      slaves: [{ name: '1', unit: 1, model: brain00, periodMs: 50 }],
      options: { timeoutMs: 100 },
    },
  ]);
  t.after(() => rig.stop());
  await rig.whenState('1', 'degraded');
  const slave = rig.slave('1');
  const before = slave.stats.lastOkAt;
  await rig.scans('1', 60);
  assert.equal(slave.state, 'degraded');
  assert.ok(!rig.transitions.some((change) => change.state === 'offline'), 'never offline');
  assert.ok(slave.stats.lastOkAt > before, 'reads keep succeeding');
  const reply = await rig.get('/rest/di/1_01');
  assert.equal(reply.status, 200);
  assert.equal(JSON.parse(reply.body).value, 1);
});
