import assert from 'node:assert/strict';
import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { findModel } from '../../../src/boards/resolve.js';
import { brain00 } from '../../../src/boards/builtin/neuron.js';
import { loadConfig } from '../../../src/config/load.js';
import type { ReloadableRuntime } from '../../../src/runtime/runtime.js';
import { Simulation } from '../../../src/sim/simulation.js';
import { modbusTcpServer } from '../../../src/sim/tcp-server.js';
import { postForm } from '../../helpers/http.js';
import { startGate, until, type Gate } from '../../helpers/in-process.js';
import { OutputTimeline } from '../../helpers/output-timeline.js';
import { tempDir } from '../../helpers/temp-dir.js';

// A reload that rebuilds a bus (its settings changed) builds new output
// devices; the pulses and EVOK `timeout`s running on the old ones used to
// keep the old objects and write their off to the stopped bus, retried
// forever: the relay stayed on. Now a reload ends them at the rebuild, while
// the old line still runs (docs/outputs.md). The board is a simulated Neuron
// behind Modbus TCP, which outlives the rebuild as a real board does.

const stateDir = tempDir('iogate-rebuilt-');
const simulation = new Simulation([{ unit: 1, model: brain00 }], 0);
const board = simulation.boards.get(1)!;
const server = modbusTcpServer(simulation.boards);
let gate: Gate;
let timeline: OutputTimeline;
let timeoutMs = 300;

/** The gateway bus (`GW`, its boards named from 2) beside the in-memory simulator startGate needs. */
function yaml(): string {
  return `
alias_file: ${join(stateDir, 'alias.yaml')}
comm_channels:
  SIM:
    type: SIMULATOR
    toggle_ms: 0
    devices:
      1:
        model: "00"
  GW:
    type: MODBUSTCP
    hostname: 127.0.0.1
    port: ${(server.address() as AddressInfo).port}
    timeout: ${timeoutMs}
    devices:
      2:
        model: "00"
        slave-id: 1
`;
}

/** A reload with the gateway bus's timeout changed: the bus and its devices are rebuilt. */
async function rebuildGatewayBus({ waitOnline = true } = {}): Promise<void> {
  timeoutMs += 100;
  const file = join(tempDir('iogate-rebuilt-config-'), 'config.yaml');
  writeFileSync(file, yaml());
  const { config } = loadConfig({ file });
  const report = await (gate.runtime as ReloadableRuntime).reload(config, (name) => findModel(name, new Map()));
  assert.deepEqual(report.restarted, ['modbus:GW']);
  if (waitOnline) await gatewayOnline();
}

function gatewayOnline(): Promise<void> {
  return until(() => gate.runtime.slaves.some((slave) => slave.name === '2' && slave.state === 'online'), 'the gateway board online');
}

const DO1 = { name: 'do/2_01', register: 1, bit: 0 };
const DO2 = { name: 'do/2_02', register: 1, bit: 1 };
const DO3 = { name: 'do/2_03', register: 1, bit: 2 };

before(async () => {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  gate = await startGate(yaml());
  timeline = new OutputTimeline([board], [DO1, DO2, DO3].map((output) => ({ ...output, board: 0 })));
  await gatewayOnline();
});

after(async () => {
  timeline.stop();
  await gate.close();
  server.close();
});

describe('a reload that rebuilds the bus of a running pulse or timeout', () => {
  test('a pulse ends at the rebuild: the output is off at the board', async () => {
    const reply = await postForm(`${gate.baseUrl}/rest/do/2_01`, { value: '1', pulse_ms: '1000' });
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    assert.equal(timeline.isOn('do/2_01'), true);
    await rebuildGatewayBus();
    await until(() => !timeline.isOn('do/2_01'), 'the pulsed output to be off at the board', 4000);
  });

  test("EVOK's DO timeout ends at the rebuild when it was to switch the output off", async () => {
    const reply = await postForm(`${gate.baseUrl}/rest/do/2_02`, { value: '1', timeout: '1' });
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    assert.equal(timeline.isOn('do/2_02'), true);
    await rebuildGatewayBus();
    await until(() => !timeline.isOn('do/2_02'), 'the output with a timeout to be off at the board', 4000);
  });

  test('a timeout that was to switch the output on is dropped: nothing switches on by itself', async () => {
    const reply = await postForm(`${gate.baseUrl}/rest/do/2_02`, { value: '0', timeout: '0.4' });
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    await rebuildGatewayBus();
    const watchedFrom = timeline.samples.length;
    await new Promise((resolve) => setTimeout(resolve, 800));
    assert.equal(timeline.samples.slice(watchedFrom).some(({ on }) => on[1]), false, 'the old timeout switched the output on');
  });

  test('an off that cannot land at the rebuild (board silent) is handed to the rebuilt output and lands when the board is back', async () => {
    const reply = await postForm(`${gate.baseUrl}/rest/do/2_03`, { value: '1', pulse_ms: '60000' });
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    assert.equal(timeline.isOn('do/2_03'), true);
    board.silent = true;
    try {
      await rebuildGatewayBus({ waitOnline: false });
      assert.equal(timeline.isOn('do/2_03'), true, 'the board heard nothing');
      assert.match(readFileSync(join(stateDir, 'outputs.json'), 'utf8'), /do\/2_03/, 'the note stays while the off has not landed');
    } finally {
      board.silent = false;
    }
    await until(() => !timeline.isOn('do/2_03'), 'the handed-over off to land at the board', 5000);
    await until(() => !/do\/2_03/.test(readFileSync(join(stateDir, 'outputs.json'), 'utf8')), 'the note to go once the off landed', 3000);
  });
});
