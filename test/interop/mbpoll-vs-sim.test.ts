import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startPtyPair } from '../helpers/pty-pair.js';
import { startSim, type SimProcess } from '../helpers/sim-process.js';
import { tempDir } from '../helpers/temp-dir.js';

// iogate-sim against a master it did not write: mbpoll (libmodbus). It reads
// registers set through the simulator's control endpoint, writes a coil and
// reads it back, over RTU on a pty and over Modbus TCP, with two boards on the
// line so unit-id routing is exercised too.

const run = promisify(execFile);

/** mbpoll with 0-based (PDU) addresses, one shot, 1 s timeout; returns the values it printed. */
async function mbpoll(target: string[], args: string[]): Promise<number[]> {
  const { stdout } = await run('mbpoll', [...target, '-0', '-1', '-o', '1', ...args]);
  return [...stdout.matchAll(/^\[\d+\]:\s+(-?\d+)/gm)].map((match) => Number(match[1]));
}

async function exercise(sim: SimProcess, target: string[], device: string[]): Promise<void> {
  await sim.setRegisters(1, 0, [0b1001]);
  // Holding registers 0..1 of the Brain section (unit 1): DI bits, DO bits.
  assert.deepEqual(await mbpoll(target, ['-a', '1', '-t', '4', '-r', '0', '-c', '2', ...device]), [0b1001, 0]);

  // Write coil 1 (DO 1_02) on unit 1; mbpoll writes when given values.
  const { stdout } = await run('mbpoll', [...target, '-0', '-o', '1', '-a', '1', '-t', '0', '-r', '1', ...device, '1']);
  assert.match(stdout, /Written 1 references/);
  assert.deepEqual(await mbpoll(target, ['-a', '1', '-t', '0', '-r', '0', '-c', '4', ...device]), [0, 1, 0, 0]);
  assert.deepEqual(await sim.registers(1, 1, 1), [0b10], 'the coil flipped the DO value register');

  // The extension on unit 2 answers for itself.
  await sim.setRegisters(2, 0, [0x0fff]);
  assert.deepEqual(await mbpoll(target, ['-a', '2', '-t', '4', '-r', '0', '-c', '1', ...device]), [0x0fff]);
  const stats = (await (await fetch(`${sim.controlUrl}/stats`)).json()) as Record<string, { requests: number }>;
  assert.ok(stats['1']!.requests >= 3 && stats['2']!.requests >= 1, JSON.stringify(stats));
}

const BOARDS = ['--model', '00', '--slave-id', '1', '--model', 'xS11', '--slave-id', '2', '--control', '127.0.0.1:0'];

test('mbpoll reads and writes iogate-sim over RTU on a pty', async (t) => {
  const dir = tempDir('iogate-interop-');
  const cable = await startPtyPair(join(dir, 'slave-tty'), join(dir, 'master-tty'));
  t.after(() => cable.stop());
  const sim = await startSim([...BOARDS, '--rtu', cable.a, '--baud', '19200']);
  t.after(() => sim.stop());
  await exercise(sim, ['-m', 'rtu', '-b', '19200', '-P', 'none', '-d', '8', '-s', '1'], [cable.b]);
});

test('mbpoll reads and writes iogate-sim over Modbus TCP', async () => {
  const sim = await startSim([...BOARDS, '--tcp', '127.0.0.1:0']);
  try {
    await exercise(sim, ['-m', 'tcp', '-p', String(sim.tcpPort)], ['127.0.0.1']);
  } finally {
    await sim.stop();
  }
});
