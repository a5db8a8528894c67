import assert from 'node:assert/strict';
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { waitFor } from '../../helpers/http.js';
import { startSim } from '../../helpers/sim-process.js';
import { spawnDaemon } from '../../helpers/spawn-daemon.js';
import { tempDir } from '../../helpers/temp-dir.js';

// `offload: firmware` end to end: the built daemon hands the rule to the board
// (a simulator in its own process, relay section `01` at unit 2: DI 2_01 →
// RO 2_01), is frozen with SIGSTOP, and the input still moves the relay at the
// simulator. After the rule is removed and the configuration reloaded, the
// board's DirectSwitch masks are cleared and the input moves nothing.

const RELAYS = 1;

function configText(port: number, withRule: boolean): string {
  return [
    'alias_file: alias.yaml',
    'comm_channels:',
    '  BUS:',
    '    type: MODBUSTCP',
    '    hostname: 127.0.0.1',
    `    port: ${port}`,
    '    devices:',
    "      2: {model: '01', slave-id: 2, scan_frequency: 20}",
    ...(withRule
      ? ['automations:', '  hall:', '    when: {input: di/2_01, edge: rising}', '    then: {output: ro/2_01, toggle: true}', '    offload: firmware']
      : []),
    '',
  ].join('\n');
}

test('an offloaded automation keeps working with the daemon frozen, and stops once removed and reloaded', { timeout: 90_000 }, async (t) => {
  const sim = await startSim(['--tcp', '127.0.0.1:0', '--control', '127.0.0.1:0', '--model', '01', '--slave-id', '2']);
  t.after(() => sim.stop());
  const dir = tempDir('iogate-offload-daemon-');
  const file = join(dir, 'config.yaml');
  writeFileSync(file, configText(sim.tcpPort!, true));
  const daemon = await spawnDaemon(['--config', file], { cwd: dir });
  t.after(() => daemon.stop());
  const relay = async () => (await sim.registers(2, RELAYS, 1))[0]! & 1;

  const automation = async () => (await (await fetch(`${daemon.baseUrl}/rest/automation/hall`)).json()) as { offloaded: boolean };
  await waitFor(async () => (await automation()).offloaded === true, 20_000);

  daemon.child.kill('SIGSTOP');
  try {
    await sim.setRegisters(2, 0, [1]);
    assert.equal(await relay(), 1, 'a rising edge toggled the relay on, iogate frozen');
    await sim.setRegisters(2, 0, [0]);
    await sim.setRegisters(2, 0, [1]);
    assert.equal(await relay(), 0, 'the next rising edge toggled it off');
  } finally {
    daemon.child.kill('SIGCONT');
  }
  await sim.setRegisters(2, 0, [0]);

  // The rule removed: the new file renamed over the old one, then a reload.
  writeFileSync(`${file}.new`, configText(sim.tcpPort!, false));
  renameSync(`${file}.new`, file);
  daemon.child.kill('SIGHUP');
  await waitFor(async () => (await sim.registers(2, 1018, 3)).every((mask) => mask === 0), 20_000);
  await sim.setRegisters(2, 0, [1]);
  assert.equal(await relay(), 0, 'the input no longer moves the relay');
  assert.equal((await fetch(`${daemon.baseUrl}/rest/automation/hall`)).status, 404);
});
