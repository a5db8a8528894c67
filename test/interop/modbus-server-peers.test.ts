import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, before, test } from 'node:test';
import { startModbusServer, type ModbusServer } from '../../src/api/modbus-server/server.js';
import { createLogger } from '../../src/logging/log.js';
import { serveRequest } from '../../src/modbus/slave.js';
import { startGate, stillBoardYaml, until, type Gate } from '../helpers/in-process.js';
import { pdu, registersOf } from '../helpers/raw-modbus-client.js';

// iogate's Modbus TCP server against masters it did not write: mbpoll
// (libmodbus) and pymodbus (Debian's python3-pymodbus). Every function code;
// reads compared with what the simulated board itself holds, writes judged
// at the board; an interlocked pair stays apart whatever the master writes.

const run = promisify(execFile);
const PYMODBUS_MASTER = fileURLToPath(new URL('./peers/pymodbus_master.py', import.meta.url));

let gate: Gate;
let server: ModbusServer;

before(async () => {
  gate = await startGate(`${stillBoardYaml()}interlocks:\n  - outputs: [do/1_01, do/1_02]\n`);
  server = await startModbusServer({ enabled: true, address: '127.0.0.1', port: 0, maxAgeMs: 100, virtualUnit: 250, write: true, allow: [] }, gate.runtime, createLogger('CRITICAL'));
});

after(async () => {
  await server?.stop();
  await gate?.close();
});

const holding = (address: number) => gate.board.get('holding', address);

/** mbpoll with 0-based (PDU) addresses, one shot; the values it printed, or its stderr when it failed. */
async function mbpoll(args: string[], values: string[] = []): Promise<{ values: number[]; output: string; failed: boolean }> {
  try {
    const { stdout } = await run('mbpoll', ['-m', 'tcp', '-p', String(server.port), '-0', '-1', '-o', '2', ...args, '127.0.0.1', ...values]);
    return { values: [...stdout.matchAll(/^\[\d+\]:\s+(-?\d+)/gm)].map((match) => Number(match[1])), output: stdout, failed: false };
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    return { values: [], output: `${stdout}${stderr}`, failed: true };
  }
}

test('mbpoll: FC3, FC4, FC1, FC2 read what the board holds', async () => {
  gate.board.set('holding', 1010, 1234);
  // Block 1008.. is polled rarely: once its last read is older than max_age_ms the server asks the board.
  const { cache } = gate.runtime.slaves[0]!;
  const block = cache.blocks[cache.blockIndexOf('holding', 1008, 4)]!;
  await until(() => performance.now() - block.readAt > 150, 'the block to age past max_age_ms');
  const expected = (fc: 1 | 2 | 3 | 4, address: number, count: number) => {
    const reply = serveRequest(gate.board, pdu.read(fc, address, count));
    // The Brain section has no input registers: the board answers 02, and so does the server.
    if ((reply[0]! & 0x80) !== 0) return [];
    if (fc >= 3) return registersOf(reply);
    return Array.from({ length: count }, (_, i) => (reply[2 + (i >> 3)]! >> (i & 7)) & 1);
  };
  assert.deepEqual((await mbpoll(['-a', '1', '-t', '4', '-r', '0', '-c', '2'])).values, expected(3, 0, 2));
  assert.deepEqual((await mbpoll(['-a', '1', '-t', '4', '-r', '1010', '-c', '1'])).values, [1234]);
  assert.deepEqual((await mbpoll(['-a', '1', '-t', '3', '-r', '0', '-c', '1'])).values, expected(4, 0, 1));
  assert.deepEqual((await mbpoll(['-a', '1', '-t', '0', '-r', '0', '-c', '4'])).values, expected(1, 0, 4));
  assert.deepEqual((await mbpoll(['-a', '1', '-t', '1', '-r', '0', '-c', '4'])).values, expected(2, 0, 4));
});

test('mbpoll: FC5, FC15, FC6, FC16 written at the board; the interlocked pair refused', async () => {
  assert.match((await mbpoll(['-a', '1', '-t', '0', '-r', '2'], ['1'])).output, /Written 1 references/);
  assert.equal((holding(1) >> 2) & 1, 1);
  assert.match((await mbpoll(['-a', '1', '-t', '0', '-r', '2'], ['0', '1'])).output, /Written 2 references/);
  assert.equal((holding(1) >> 2) & 3, 0b10);
  assert.match((await mbpoll(['-a', '1', '-t', '4', '-r', '1010'], ['77'])).output, /Written 1 references/);
  assert.equal(holding(1010), 77);
  assert.match((await mbpoll(['-a', '1', '-t', '4', '-r', '1010'], ['7', '8'])).output, /Written 2 references/);
  assert.deepEqual([holding(1010), holding(1011)], [7, 8]);
  const before = holding(1) & 0b11;
  const refused = await mbpoll(['-a', '1', '-t', '0', '-r', '0'], ['1', '1']);
  assert.ok(refused.failed, refused.output);
  assert.match(refused.output, /Slave device or server failure|exception/i);
  assert.equal(holding(1) & 0b11, before);
  await mbpoll(['-a', '1', '-t', '0', '-r', '2'], ['0', '0']);
});

test('pymodbus: every function code, the exceptions, and the interlock', async () => {
  gate.board.set('holding', 1010, 0);
  // The script reads before it writes: what it should read is taken now.
  const reads = (fc: 3 | 4, count: number) => {
    const reply = serveRequest(gate.board, pdu.read(fc, 0, count));
    return (reply[0]! & 0x80) !== 0 ? { exception: reply[1] } : registersOf(reply);
  };
  const fc3 = reads(3, 2);
  const fc4 = reads(4, 1);
  const bits = (fc: 1 | 2) => {
    const reply = serveRequest(gate.board, pdu.read(fc, 0, 4));
    if ((reply[0]! & 0x80) !== 0) return { exception: reply[1] };
    return Array.from({ length: 4 }, (_, i) => ((reply[2]! >> i) & 1) === 1);
  };
  const fc1 = bits(1);
  const fc2 = bits(2);
  const { stdout } = await run('/usr/bin/python3', [PYMODBUS_MASTER, String(server.port), '1']);
  const result = JSON.parse(stdout) as Record<string, unknown>;
  assert.deepEqual(result['fc3'], fc3);
  assert.deepEqual(result['fc4'], fc4);
  assert.deepEqual(result['fc1'], fc1);
  assert.deepEqual(result['fc2'], fc2);
  for (const fc of ['fc5', 'fc15', 'fc6', 'fc16']) assert.equal(result[fc], 'ok', `${fc}: ${JSON.stringify(result[fc])}`);
  assert.equal((holding(1) >> 2) & 3, 0b10, 'FC5 then FC15 left DO 3 off and DO 4 on');
  assert.deepEqual(result['fc23'], [5, 9]);
  assert.deepEqual([holding(1010), holding(1011)], [5, 9]);
  assert.deepEqual(result['interlocked'], { exception: 4 });
  assert.notEqual(holding(1) & 0b11, 0b11);
  assert.deepEqual(result['bad_unit'], { exception: 11 });
  assert.deepEqual(result['bad_address'], { exception: 2 });
});
