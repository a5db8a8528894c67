import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { reconcileFirmwareOffload } from '../../../src/automations/offload/reconcile.js';
import { slaveOffloadDeps } from '../../../src/automations/offload/slave-deps.js';
import { findModel } from '../../../src/boards/resolve.js';
import { loadConfig } from '../../../src/config/load.js';
import { createLogger } from '../../../src/logging/log.js';
import { buildRuntime, type Runtime } from '../../../src/runtime/runtime.js';
import { startSim } from '../../helpers/sim-process.js';
import { tempDir } from '../../helpers/temp-dir.js';

// Fail-operational: once a rule is offloaded, the board keeps carrying it out
// with iogate gone from the line. The simulator runs in its own process (a
// relay section `01` as unit 2: DI 1 → RO 1); iogate's core runs here over
// Modbus TCP, and is stopped altogether while the input moves. After the rule
// is removed and the offload reconciled again, the input no longer moves it.

const RELAYS = 1; // the relays' value register

async function startIogate(dir: string, port: number): Promise<Runtime> {
  const file = join(dir, 'config.yaml');
  writeFileSync(
    file,
    `alias_file: ${join(dir, 'alias.yaml')}
state_dir: ${dir}
comm_channels:
  BUS:
    type: MODBUSTCP
    hostname: 127.0.0.1
    port: ${port}
    devices:
      2:
        model: '01'
        slave-id: 2
        scan_frequency: 20
`,
  );
  const { config } = loadConfig({ file });
  const runtime = buildRuntime(config, (name) => findModel(name, new Map()), createLogger('CRITICAL'));
  await runtime.start();
  return runtime;
}

async function reconcileOnce(dir: string, port: number, rules: Parameters<typeof reconcileFirmwareOffload>[1]) {
  const runtime = await startIogate(dir, port);
  try {
    return await reconcileFirmwareOffload(slaveOffloadDeps({ slaves: runtime.slaves, stateDir: dir, guard: () => undefined, log: () => {} }), rules);
  } finally {
    await runtime.stop();
  }
}

test('an offloaded rule works with iogate stopped, and no longer once removed', { timeout: 60_000 }, async (t) => {
  const sim = await startSim(['--tcp', '127.0.0.1:0', '--control', '127.0.0.1:0', '--model', '01', '--slave-id', '2']);
  t.after(() => sim.stop());
  const dir = tempDir('iogate-offload-stopped-');
  const relay = async () => (await sim.registers(2, RELAYS, 1))[0]! & 1;

  const results = await reconcileOnce(dir, sim.tcpPort!, [{ id: 'hall', input: 'di 2_01', output: 'ro 2_01', mode: 'toggle' }]);
  assert.deepEqual(results, [{ id: 'hall', offloaded: true }]);

  // iogate is stopped: nothing of it is on the line now.
  await sim.setRegisters(2, 0, [1]);
  assert.equal(await relay(), 1, 'a rising edge toggled the relay on');
  await sim.setRegisters(2, 0, [0]);
  assert.equal(await relay(), 1, 'the falling edge left it');
  await sim.setRegisters(2, 0, [1]);
  assert.equal(await relay(), 0, 'the next rising edge toggled it off');

  // The rule is removed from the config: start, reconcile with the rest (none), stop.
  assert.deepEqual(await reconcileOnce(dir, sim.tcpPort!, []), []);
  assert.deepEqual(await sim.registers(2, 1018, 3), [0, 0, 0], 'enable, polarity and toggle masks cleared');
  await sim.setRegisters(2, 0, [0]);
  await sim.setRegisters(2, 0, [1]);
  assert.equal(await relay(), 0, 'the input no longer moves the relay');
});
