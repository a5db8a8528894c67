import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnDaemon, type SpawnedDaemon } from '../helpers/spawn-daemon.js';
import { startPtyPair } from '../helpers/pty-pair.js';
import { freePort } from './free-port.js';
import { startPymodbus } from './peers/pymodbus-peer.js';
import { tempDir } from '../helpers/temp-dir.js';

// iogate's master against a Modbus slave it did not write: Debian's pymodbus.
// Register values only the slave knows must come out of the REST API, and
// REST writes must land in the slave's coils, over RTU (19200 8N1 on a socat
// pty pair) and over Modbus TCP. The board map is the Neuron Brain section 00:
// DI values in holding register 0, DO coils 0..3.

/** The daemon gives no signal for its first scan; ask until the slave's values are there. */
async function readWhenPolled(daemon: SpawnedDaemon, path: string): Promise<Record<string, unknown>> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const response = await fetch(daemon.apiUrl + path);
    if (response.status === 200) {
      const body = (await response.json()) as Record<string, unknown>;
      if (body['value'] !== null) return body;
    }
    assert.ok(Date.now() < deadline, `no value for ${path} within 10 s:\n${daemon.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function exercise(daemon: SpawnedDaemon, peer: Awaited<ReturnType<typeof startPymodbus>>): Promise<void> {
  // Holding register 0 = 0b0101: inputs 1 and 3 on.
  assert.equal((await readWhenPolled(daemon, '/rest/di/1_01'))['value'], 1);
  assert.equal((await readWhenPolled(daemon, '/rest/di/1_02'))['value'], 0);
  assert.equal((await readWhenPolled(daemon, '/rest/di/1_03'))['value'], 1);
  // The DI counter of input 2: two registers, low word first (8 + 2·1 = 10, 11).
  assert.equal((await readWhenPolled(daemon, '/rest/di/1_02'))['counter'], 0x00020001);

  for (const [circuit, coil] of [['1_01', 0], ['1_03', 2]] as const) {
    const reply = await fetch(`${daemon.apiUrl}/rest/do/${circuit}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: 'value=1',
    });
    assert.equal(reply.status, 200, await reply.text());
    assert.deepEqual(await peer.get('co', coil, 1), [1]);
  }
  assert.deepEqual(await peer.get('co', 0, 4), [1, 0, 1, 0]);
}

function config(dir: string, bus: string): string {
  const file = join(dir, 'config.yaml');
  writeFileSync(file, `alias_file: alias.yaml\ncomm_channels:\n  PEER:\n${bus}    devices:\n      1:\n        model: '00'\n        slave-id: 1\n`);
  return file;
}

const INITIAL = ['--set', '0=5', '--set', '10=1', '--set', '11=2'];

// Each peer is stopped by an after-hook registered as soon as it runs, so a
// peer that fails to start does not leave the others holding the test open.
test('iogate reads and writes a pymodbus RTU slave over a pty at 19200 8N1', async (t) => {
  const dir = tempDir('iogate-interop-');
  const cable = await startPtyPair(join(dir, 'slave-tty'), join(dir, 'master-tty'));
  t.after(() => cable.stop());
  const peer = await startPymodbus(['--rtu', cable.a, '--baud', '19200', ...INITIAL]);
  t.after(() => peer.stop());
  const file = config(dir, `    type: MODBUSRTU\n    port: ${cable.b}\n    baudrate: 19200\n    parity: N\n    stopbits: 1\n`);
  const daemon = await spawnDaemon(['--config', file]);
  t.after(() => daemon.stop());
  await exercise(daemon, peer);
});

test('iogate reads and writes a pymodbus Modbus TCP slave', async (t) => {
  const dir = tempDir('iogate-interop-');
  const port = await freePort();
  const peer = await startPymodbus(['--tcp', String(port), ...INITIAL]);
  t.after(() => peer.stop());
  const file = config(dir, `    type: MODBUSTCP\n    hostname: 127.0.0.1\n    port: ${port}\n`);
  const daemon = await spawnDaemon(['--config', file]);
  t.after(() => daemon.stop());
  await exercise(daemon, peer);
});
