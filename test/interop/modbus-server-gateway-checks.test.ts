import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { test } from 'node:test';
import { freePort } from './free-port.js';
import { spawnDaemon } from '../helpers/spawn-daemon.js';
import { startPtyPair } from '../helpers/pty-pair.js';
import { startSim } from '../helpers/sim-process.js';
import { tempDir } from '../helpers/temp-dir.js';

// The set-up the mbusd gateway's own integration suite uses, with iogate as
// the gateway: a pty pair from socat, a simulated RTU slave on one end, the
// gateway on the other, and pymodbus as the Modbus TCP master. Here the slave
// is iogate-sim and the gateway is the built daemon, which also polls the
// board. The checks are the same round trips (write coils and read them
// back, flip one, discrete inputs, input registers, holding registers
// written and read back, exception 02 for a coil out of the map, a broadcast
// write), every read judged against the simulated board and every write
// judged at it.

const run = promisify(execFile);
const CHECKS = fileURLToPath(new URL('./peers/pymodbus_gateway_checks.py', import.meta.url));
const UNIT = 1;

test('pymodbus through iogate as the RTU gateway: the checks mbusd passes, judged at the board', async (t) => {
  const dir = tempDir('iogate-gateway-');
  const cable = await startPtyPair(join(dir, 'slave-tty'), join(dir, 'master-tty'));
  t.after(() => cable.stop());
  const sim = await startSim(['--model', '00', '--slave-id', String(UNIT), '--rtu', cable.a, '--baud', '19200', '--control', '127.0.0.1:0']);
  t.after(() => sim.stop());
  const port = await freePort();
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
      ${UNIT}:
        model: '00'
        slave-id: ${UNIT}
apis:
  modbus_server:
    enabled: true
    address: 127.0.0.1
    port: ${port}
`,
  );
  // Four DIs on, the Brain section's pattern as the board reports it in holding register 0.
  const inputs = 0b1011;
  await sim.setRegisters(UNIT, 0, [inputs]);
  const daemon = await spawnDaemon(['--config', join(dir, 'config.yaml')], { cwd: dir, tap: false });
  t.after(() => daemon.stop());
  assert.match(daemon.output(), /Modbus TCP server listening on 127\.0\.0\.1:\d+/);

  const coils = Array.from({ length: 4 }, () => Math.random() < 0.5);
  const registers = Array.from({ length: 2 }, () => Math.floor(Math.random() * 8));
  const { stdout } = await run('/usr/bin/python3', [CHECKS, String(port), String(UNIT), coils.map(Number).join(','), registers.join(',')], { timeout: 60_000 });
  const answers = JSON.parse(stdout) as Record<string, unknown>;

  // FC15 then FC1: the bits written come back, and the board holds them.
  assert.deepEqual(answers.fc15, { address: 0, count: 4, value: null }, stdout);
  assert.deepEqual(answers.fc1_after_fc15, coils, stdout);
  // FC5 flips the first coil; FC1 sees it, and so does the board's DO value register.
  assert.deepEqual(answers.fc5, { address: 0, count: null, value: !coils[0] }, stdout);
  assert.deepEqual(answers.fc1_after_fc5, [!coils[0]], stdout);
  const finalCoils = [!coils[0], ...coils.slice(1)];
  const [doBits] = await sim.registers(UNIT, 1, 1);
  assert.deepEqual(Array.from({ length: 4 }, (_, i) => ((doBits! >> i) & 1) === 1), finalCoils, 'the coils at the board');

  // FC2: the board's firmware reports its inputs in holding register 0, not as
  // discrete inputs, so its own answer to FC2, 02, comes through; FC3 reads them.
  assert.deepEqual(answers.fc2, { exception: 2, function: 2 }, stdout);
  assert.deepEqual(answers.fc3_inputs, [inputs], stdout);
  // FC4: this board has no input registers, so the board's own answer, 02, comes through.
  assert.deepEqual(answers.fc4, { exception: 2, function: 4 }, stdout);

  // FC16 then FC3, FC6 then FC3: read back, and held by the board.
  assert.deepEqual(answers.fc16, { address: 1010, count: 2, value: null }, stdout);
  assert.deepEqual(answers.fc3_after_fc16, registers, stdout);
  const first = (registers[0]! + 1) % 65535;
  assert.deepEqual(answers.fc6, { address: 1010, count: null, value: first }, stdout);
  assert.deepEqual(answers.fc3_after_fc6, [first], stdout);

  // A coil the board does not have: exception 02 for FC5, as mbusd relays it.
  assert.deepEqual(answers.coil_out_of_map, { exception: 2, function: 5 }, stdout);

  // Broadcast (unit 0): mbusd relays it to every slave unanswered. iogate does
  // not: a broadcast write would pass no rule and confirm nothing, so it gets
  // 0B and the board keeps the values written before.
  assert.deepEqual(answers.broadcast, { exception: 0x0b, function: 16 }, stdout);
  assert.deepEqual(await sim.registers(UNIT, 1010, 2), [first, registers[1]], 'the registers at the board');
});
