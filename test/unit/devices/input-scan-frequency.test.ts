import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { findModel } from '../../../src/boards/resolve.js';
import { ConfigError } from '../../../src/config/errors.js';
import { loadConfig } from '../../../src/config/load.js';
import { startupSummary } from '../../../src/config/summary.js';
import { inputValueBlocks } from '../../../src/devices/slave/input-scan-loop.js';
import { RegisterCache } from '../../../src/devices/slave/register-cache.js';
import type { SimulatedBoard } from '../../../src/sim/simulated-board.js';
import { startGate, until } from '../../helpers/in-process.js';
import { connect, deviceIn } from '../../helpers/ws-client.js';
import { tempDir } from '../../helpers/temp-dir.js';

// `input_scan_frequency`: the blocks holding digital input values are read on
// a faster grid of their own, through the same bus, on top of the scan.

function boardYaml(device: string): string {
  return `
apis:
  websocket:
    enabled: true
comm_channels:
  SIM:
    type: SIMULATOR
    toggle_ms: 0
    devices:
      1:
${device}
`;
}

function loadDevice(device: string) {
  const file = join(tempDir('iogate-config-'), 'config.yaml');
  writeFileSync(file, boardYaml(device));
  return { file, load: () => loadConfig({ file }).config.buses[0]!.devices[0]! };
}

/** Counts the simulated board's reads by start address, as they arrive on the far end of the line. */
function countReads(board: SimulatedBoard): Map<number, number> {
  const reads = new Map<number, number>();
  const read = board.readRegisters.bind(board);
  board.readRegisters = (space, address, quantity) => {
    reads.set(address, (reads.get(address) ?? 0) + 1);
    return read(space, address, quantity);
  };
  return reads;
}

test('input_scan_frequency is read per device, defaults to off and shows in the start-up summary', () => {
  const fast = loadDevice('        model: "00"\n        input_scan_frequency: 250');
  assert.equal(fast.load().inputScanFrequency, 250);
  const config = loadConfig({ file: fast.file }).config;
  assert.match(startupSummary(config), /device 1 +model 00 +slave 1 +50 Hz, inputs 250 Hz/);
  assert.equal(loadDevice('        model: "00"').load().inputScanFrequency, 0);
});

test('a bad input_scan_frequency is refused with file, line, key and expectation', () => {
  for (const bad of ['-1', '1001', '2.5', 'fast']) {
    const { file, load } = loadDevice(`        model: "00"\n        input_scan_frequency: ${bad}`);
    assert.throws(load, (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.deepEqual(error.problems, [
        `${file}:12: comm_channels.SIM.devices.1.input_scan_frequency: expected an integer 0..1000, got '${bad}'`,
      ]);
      return true;
    });
  }
});

test('the input blocks are the ones holding DI values, also when the inputs span two registers', () => {
  const brain = findModel('00', new Map())!;
  const brainBlocks = inputValueBlocks(brain, new RegisterCache(brain.blocks));
  assert.deepEqual(brainBlocks.map((index) => brain.blocks[index]!.start_reg), [0]);
  // E-16DI14DI: 30 inputs in two groups, values in registers 0 and 1 of one block.
  const wide = findModel('0A', new Map())!;
  const wideBlocks = inputValueBlocks(wide, new RegisterCache(wide.blocks));
  assert.equal(wideBlocks.length, 1);
  const block = wide.blocks[wideBlocks[0]!]!;
  assert.ok(block.start_reg === 0 && block.count >= 2, JSON.stringify(block));
});

test('the DI block is read many times per scan; the other blocks only by the scan', async (t) => {
  // 10 Hz scans, 200 Hz input reads: some 20 input reads per scan.
  const gate = await startGate(boardYaml('        model: "00"\n        scan_frequency: 10\n        input_scan_frequency: 200'));
  t.after(() => gate.close());
  const reads = countReads(gate.board);
  const slave = gate.runtime.slaves[0]!;
  const scansBefore = slave.stats.scans;
  await until(() => slave.stats.scans - scansBefore >= 4, 'four scans');
  const scans = slave.stats.scans - scansBefore;
  const inputReads = reads.get(0) ?? 0;
  // Timers on a busy machine run late, so far fewer than 20 per scan is still a pass; only the scan would give ≤ scans + 1.
  assert.ok(inputReads >= 3 * scans, `DI block read ${inputReads} times in ${scans} scans`);
  for (const [address, count] of reads) {
    if (address !== 0) assert.ok(count <= scans + 1, `block at ${address} read ${count} times in ${scans} scans`);
  }
  // The planned poll rate counts the extra reads (the bench compares it with the reads served).
  // Blocks at 0 (every scan), 6, 20 and 1008 (every 250th), 8 and 3000 (every 50th); register 20
  // follows the block at 8-19 and goes in the same request when both are due.
  const scanned = 10 * (1 + 1 / 250 + 1 / 50 + 1 / 250 + 1 / 50);
  assert.ok(Math.abs(gate.runtime.plannedPollRate - (scanned + 200)) < 1e-9, String(gate.runtime.plannedPollRate));
});

test('without the option the DI block is read once per scan', async (t) => {
  const gate = await startGate(boardYaml('        model: "00"\n        scan_frequency: 20'));
  t.after(() => gate.close());
  const reads = countReads(gate.board);
  const slave = gate.runtime.slaves[0]!;
  const scansBefore = slave.stats.scans;
  await until(() => slave.stats.scans - scansBefore >= 4, 'four scans');
  const scans = slave.stats.scans - scansBefore;
  const inputReads = reads.get(0) ?? 0;
  assert.ok(inputReads >= scans - 1 && inputReads <= scans + 1, `DI block read ${inputReads} times in ${scans} scans`);
});

test('an input change reaches a WebSocket client between two scans', async (t) => {
  // One scan per 5 s: a change seen within that time came from an input read.
  const gate = await startGate(boardYaml('        model: "00"\n        scan_frequency: 0.2\n        input_scan_frequency: 100'));
  t.after(() => gate.close());
  const client = await connect(gate.wsUrl);
  t.after(() => client.close());
  const slave = gate.runtime.slaves[0]!;
  const scansBefore = slave.stats.scans;
  gate.setInput(1, true);
  const pushed = await client.nextMatching((message) => deviceIn(message, 'di', '1_02')?.value === 1);
  assert.equal(slave.stats.scans, scansBefore, 'no scan ran in between');
  // The push carries the input only: the other blocks were not re-read.
  assert.deepEqual(pushed.map((device: { dev: string; circuit: string }) => `${device.dev} ${device.circuit}`), ['di 1_02']);
});

test('an offline slave is not read between its probes', async (t) => {
  const gate = await startGate(boardYaml('        model: "00"\n        scan_frequency: 50\n        input_scan_frequency: 500'));
  t.after(() => gate.close());
  const slave = gate.runtime.slaves[0]!;
  // The board leaves the line: silence, as a slave that lost power gives (an
  // exception reply would be an answer, and the slave only degraded).
  const boards = [...gate.runtime.simulations.values()][0]!.boards as Map<number, unknown>;
  boards.delete(1);
  await until(() => slave.state === 'offline', 'the slave going offline');
  const requestsAtOffline = slave.stats.requests;
  await new Promise((resolve) => setTimeout(resolve, 200));
  // At 500 Hz the input loop would have tried some 100 times; only the scan's probes may run.
  assert.ok(slave.stats.requests - requestsAtOffline <= 12, `${slave.stats.requests - requestsAtOffline} requests while offline`);
});
