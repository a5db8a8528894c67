import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnDaemon } from '../helpers/spawn-daemon.js';
import { startPtyPair } from '../helpers/pty-pair.js';
import { startSim } from '../helpers/sim-process.js';
import { tempDir } from '../helpers/temp-dir.js';

// The shipped form of the daemon: dist/iogate.js and dist/prebuilds copied on
// their own into an empty directory (no node_modules anywhere near), driving
// a Modbus RTU line. The far end is the bundled simulator from the same
// directory, so both bundles must find the serialport addon beside them.

const root = fileURLToPath(new URL('../..', import.meta.url));

test('the bundle alone in a directory polls and writes an RTU slave over a pty', async (t) => {
  execFileSync(process.execPath, ['build.mjs'], { cwd: root, stdio: 'inherit' });
  const dir = tempDir('iogate-bundle-');
  for (const file of ['iogate.js', 'iogate-sim.js', 'prebuilds']) {
    cpSync(join(root, 'dist', file), join(dir, file), { recursive: true });
  }
  const cable = await startPtyPair(join(dir, 'slave-tty'), join(dir, 'master-tty'));
  t.after(() => cable.stop());
  const sim = await startSim(['--model', '00', '--slave-id', '3', '--rtu', cable.a, '--control', '127.0.0.1:0'], join(dir, 'iogate-sim.js'));
  t.after(() => sim.stop());
  writeFileSync(
    join(dir, 'config.yaml'),
    `alias_file: alias.yaml
comm_channels:
  RS485:
    type: MODBUSRTU
    port: ${cable.b}
    baudrate: 19200
    parity: N
    devices:
      1:
        model: '00'
        slave-id: 3
`,
  );
  await sim.setRegisters(3, 0, [0b0101]);
  const daemon = await spawnDaemon(['--config', join(dir, 'config.yaml')], { cwd: dir, bundle: join(dir, 'iogate.js') });
  try {
    const deadline = Date.now() + 5000;
    let di: { value?: number } = {};
    // The daemon gives no signal for its first scan; ask until it has values.
    while (di.value === undefined || di.value === null) {
      assert.ok(Date.now() < deadline, `no value within 5 s:\n${daemon.output()}`);
      const response = await fetch(`${daemon.apiUrl}/rest/di/1_03`);
      if (response.status === 200) di = (await response.json()) as { value?: number };
      if (di.value === undefined || di.value === null) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.equal(di.value, 1);
    const write = await fetch(`${daemon.apiUrl}/rest/do/1_02`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: 'value=1',
    });
    assert.equal(write.status, 200);
    assert.deepEqual(await sim.registers(3, 1, 1), [0b10]);
    const metrics = await (await fetch(`${daemon.apiUrl}/metrics`)).text();
    assert.match(metrics, /iogate_bus_connected\{bus="RS485"\} 1/);
    assert.match(metrics, /iogate_slave_online\{bus="RS485",slave="1",unit="3"\} 1/);
    assert.doesNotMatch(daemon.output(), /No native build/);
  } finally {
    await daemon.stop();
  }
});
