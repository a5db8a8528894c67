import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startModbusServer, type ModbusServer } from '../../../src/api/modbus-server/server.js';
import type { ModbusServerConfig } from '../../../src/config/types.js';
import { createLogger } from '../../../src/logging/log.js';
import { serveRequest } from '../../../src/modbus/slave.js';
import type { SimulatedBoard } from '../../../src/sim/simulated-board.js';
import { startGate, stillBoardYaml, until, type Gate } from '../../helpers/in-process.js';
import { RawModbusClient, pdu } from '../../helpers/raw-modbus-client.js';

// FC1 (read coils) from the poll cache: a board's DO, RO and LED coils read
// back as bits of their value register, which iogate polls, so a fresh poll
// answers them without a transaction on the line. What the server answers is
// compared with what the simulated board answers itself, and the board's own
// count of bit reads shows whether the request reached it.

// A minute: a value the cache took stays young enough for the whole test, whichever block holds it.
const base: ModbusServerConfig = { enabled: true, address: '127.0.0.1', port: 0, maxAgeMs: 60_000, virtualUnit: 250, write: true, allow: [] };
const log = createLogger('CRITICAL');

let gate: Gate;
let board: SimulatedBoard;
let server: ModbusServer;
let client: RawModbusClient;
/** Coil and discrete-input reads the simulated board has served. */
let bitReads = 0;

before(async () => {
  gate = await startGate(stillBoardYaml());
  board = gate.board;
  const readBits = board.readBits.bind(board);
  board.readBits = (space, address, quantity) => {
    bitReads++;
    return readBits(space, address, quantity);
  };
  server = await startModbusServer(base, gate.runtime, log);
  client = await RawModbusClient.connect(server.port);
});

after(async () => {
  client?.close();
  await server?.stop();
  await gate?.close();
});

/** What the simulated board itself answers to `request`, not counted as a read through the server. */
function atBoard(request: Buffer): Buffer {
  const reads = bitReads;
  const reply = serveRequest(board, request);
  bitReads = reads;
  return reply;
}

/** The model's output groups (DO, RO, LED) as coil ranges with their value register. */
function outputGroups(): Array<{ type: string; coil: number; count: number; register: number }> {
  const groups = [];
  for (const feature of gate.runtime.slaves[0]!.model.features) {
    if (feature.type === 'DO' || feature.type === 'RO' || feature.type === 'LED') {
      groups.push({ type: feature.type, coil: feature.val_coil, count: feature.count, register: feature.val_reg });
    }
  }
  return groups;
}

/**
 * Sets `value` in `register` at the board and waits until a poll has brought
 * it into the cache. The Brain board's LED register is polled every 250th
 * scan (5 s at 50 Hz), more on a loaded machine.
 */
async function setPolled(register: number, value: number): Promise<void> {
  board.set('holding', register, value);
  const { cache } = gate.runtime.slaves[0]!;
  await until(() => cache.get('holding', register) === value, `register ${register} = ${value} in the poll cache`, 20_000);
}

describe('FC1 from the poll cache', () => {
  test('the board model has output coils to read', () => {
    assert.ok(outputGroups().some((group) => group.count >= 2 && group.count <= 16), JSON.stringify(outputGroups()));
  });

  test('coils of a polled value register come from the cache, match the board, and the board is not asked', async () => {
    for (const group of outputGroups().filter((g) => g.count <= 16)) {
      const pattern = 0b1010_0110_1001_0101 & ((1 << group.count) - 1);
      await setPolled(group.register, pattern);
      const request = pdu.read(1, group.coil, group.count);
      const reads = bitReads;
      const hits = server.stats.cacheHits;
      const passthroughs = server.stats.passthroughs;
      const reply = await client.request(1, request);
      assert.deepEqual(reply, atBoard(request), `${group.type} coils ${group.coil}..${group.coil + group.count - 1}`);
      assert.equal(bitReads, reads, `the board served no coil read for ${group.type}`);
      assert.equal(server.stats.cacheHits, hits + 1);
      assert.equal(server.stats.passthroughs, passthroughs);
      // A part of the group, not starting at its first coil.
      const part = pdu.read(1, group.coil + 1, group.count - 1);
      assert.deepEqual(await client.request(1, part), atBoard(part));
      assert.equal(bitReads, reads);
      board.set('holding', group.register, 0);
    }
  });

  test('a run that reaches a coil with no polled register behind it goes to the board', async () => {
    const group = outputGroups()[0]!;
    // The coil after the last coil of every group, or an action coil: no register bit answers it.
    const mirrored = new Set(outputGroups().flatMap((g) => Array.from({ length: g.count }, (_, i) => g.coil + i)));
    let beyond = group.coil + group.count;
    while (mirrored.has(beyond)) beyond++;
    const request = pdu.read(1, beyond - 1, 2);
    const reads = bitReads;
    const passthroughs = server.stats.passthroughs;
    assert.deepEqual(await client.request(1, request), atBoard(request));
    assert.equal(bitReads, reads + 1, 'the board answered it');
    assert.equal(server.stats.passthroughs, passthroughs + 1);
  });

  test('FC2 (discrete inputs) goes to the board', async () => {
    const request = pdu.read(2, 0, 4);
    const reads = bitReads;
    assert.deepEqual(await client.request(1, request), atBoard(request));
    assert.equal(bitReads, reads + 1);
  });

  test('coils whose register poll is older than max_age_ms go to the board', async () => {
    const stale = await startModbusServer({ ...base, maxAgeMs: 0 }, gate.runtime, log);
    const staleClient = await RawModbusClient.connect(stale.port);
    try {
      const group = outputGroups()[0]!;
      await setPolled(group.register, 1);
      const request = pdu.read(1, group.coil, 1);
      const reads = bitReads;
      assert.deepEqual(await staleClient.request(1, request), atBoard(request));
      assert.equal(bitReads, reads + 1, 'the board answered it');
      assert.equal(stale.stats.cacheHits, 0);
      await setPolled(group.register, 0);
    } finally {
      staleClient.close();
      await stale.stop();
    }
  });
});
