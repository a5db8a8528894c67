import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { MAX_CONNECTIONS_PER_ADDRESS } from '../../../src/api/modbus-server/listener.js';
import { startModbusServer, type ModbusServer } from '../../../src/api/modbus-server/server.js';
import type { ModbusServerConfig } from '../../../src/config/types.js';
import { serveVirtual } from '../../../src/api/modbus-server/virtual-unit.js';
import type { Device } from '../../../src/devices/device.js';
import { counterTotalOf } from '../../../src/devices/digital/di.js';
import { createLogger } from '../../../src/logging/log.js';
import { serveRequest } from '../../../src/modbus/slave.js';
import type { SimulatedBoard } from '../../../src/sim/simulated-board.js';
import { startGate, stillBoardYaml, until, type Gate } from '../../helpers/in-process.js';
import { BRAIN_DO, OutputTimeline } from '../../helpers/output-timeline.js';
import { RawModbusClient, pdu, registersOf } from '../../helpers/raw-modbus-client.js';

// The Modbus TCP server against a simulated Neuron brain board (unit 1),
// through real sockets and a hand-written client. What it reads is compared
// with what the simulator answers itself; writes are judged at the simulator.

const DWELL_MS = 100;
const yaml = `${stillBoardYaml()}interlocks:
  - outputs: [do/1_01, do/1_02]
    dwell_ms: ${DWELL_MS}
`;

const base: ModbusServerConfig = { enabled: true, address: '127.0.0.1', port: 0, maxAgeMs: 100, virtualUnit: 250, write: true, allow: [] };
const log = createLogger('CRITICAL');

let gate: Gate;
let board: SimulatedBoard;
let server: ModbusServer;
let client: RawModbusClient;

before(async () => {
  gate = await startGate(yaml);
  board = gate.board;
  server = await startModbusServer(base, gate.runtime, log);
  client = await RawModbusClient.connect(server.port);
});

after(async () => {
  client?.close();
  await server?.stop();
  await gate?.close();
});

/** What the simulated board itself answers to `request`. */
const atBoard = (request: Buffer) => serveRequest(board, request);

const exception = (reply: Buffer) => ((reply[0]! & 0x80) === 0x80 ? reply[1] : undefined);

describe('reads', () => {
  test('FC3 of a polled register comes from the poll cache and matches the board', async () => {
    const hits = server.stats.cacheHits;
    const reply = await client.request(1, pdu.read(3, 0, 2));
    assert.deepEqual(reply, atBoard(pdu.read(3, 0, 2)));
    assert.equal(server.stats.cacheHits, hits + 1);
  });

  test('a register polled rarely (older than max_age_ms) is read from the board through the bus queue', async () => {
    board.set('holding', 1010, 4321);
    // Block 1008.. is polled every 250th scan: once its last read is older than max_age_ms, the cache does not answer.
    const { cache } = gate.runtime.slaves[0]!;
    const block = cache.blocks[cache.blockIndexOf('holding', 1008, 4)]!;
    await until(() => performance.now() - block.readAt > base.maxAgeMs + 20, 'the block to age past max_age_ms');
    const passthroughs = server.stats.passthroughs;
    const reply = await client.request(1, pdu.read(3, 1008, 4));
    assert.deepEqual(registersOf(reply).slice(2), [4321, board.get('holding', 1011)]);
    assert.deepEqual(reply, atBoard(pdu.read(3, 1008, 4)));
    assert.equal(server.stats.passthroughs, passthroughs + 1);
  });

  for (const fc of [1, 2, 4] as const) {
    test(`FC${fc} is answered as the board answers it`, async () => {
      const request = pdu.read(fc, 0, 4);
      assert.deepEqual(await client.request(1, request), atBoard(request));
    });
  }

  test('an address outside the board map gets exception 02', async () => {
    const reply = await client.request(1, pdu.read(3, 500, 1));
    assert.equal(exception(reply), 2);
  });

  test('a unit no device answers at gets exception 0B; an unknown function 01', async () => {
    assert.equal(exception(await client.request(99, pdu.read(3, 0, 1))), 0x0b);
    assert.equal(exception(await client.request(1, Buffer.from([8, 0, 0, 0, 0]))), 1);
    assert.ok((server.stats.exceptions.get(0x0b) ?? 0) >= 1);
  });

  test('an offline board gets exception 0B', async () => {
    const slave = gate.runtime.slaves[0]!;
    board.powerOff();
    try {
      await until(() => slave.state === 'offline', 'the board to be found offline', 10_000);
      const passthroughs = server.stats.passthroughs;
      assert.equal(exception(await client.request(1, pdu.read(3, 1008, 1))), 0x0b);
      assert.equal(server.stats.passthroughs, passthroughs, 'nothing was sent on to an offline board');
    } finally {
      board.powerOn(false);
      await until(() => slave.state === 'online', 'the board back online', 10_000);
    }
  });
});

describe('writes', () => {
  test('FC5 switches a DO at the board; FC15 two of them', async () => {
    const hits = server.stats.cacheHits;
    assert.deepEqual(await client.request(1, pdu.writeCoil(2, true)), pdu.writeCoil(2, true));
    assert.equal((board.get('holding', 1) >> 2) & 1, 1);
    // The mirror register read from the cache right after shows it, not the value of the last poll.
    assert.equal((registersOf(await client.request(1, pdu.read(3, 1, 1)))[0]! >> 2) & 1, 1);
    assert.equal(server.stats.cacheHits, hits + 1);
    assert.ok((server.stats.writesBy.get(`modbus:${client.socket.localAddress}`) ?? 0) >= 1, JSON.stringify([...server.stats.writesBy]));
    const reply = await client.request(1, pdu.writeCoils(2, [false, true]));
    assert.deepEqual(reply, Buffer.from([15, 0, 2, 0, 2]));
    assert.equal((board.get('holding', 1) >> 2) & 3, 0b10);
    await client.request(1, pdu.writeCoils(2, [false, false]));
    assert.equal((board.get('holding', 1) >> 2) & 3, 0);
  });

  test('FC6 and FC16 on the mirror register move the outputs; on a configuration register they pass through', async () => {
    assert.deepEqual(await client.request(1, pdu.writeRegister(1, 0b0100)), pdu.writeRegister(1, 0b0100));
    assert.equal(board.get('holding', 1) & 0b1100, 0b0100);
    await client.request(1, pdu.writeRegisters(1, [0]));
    assert.equal(board.get('holding', 1) & 0b1111, 0);
    const reply = await client.request(1, pdu.writeRegisters(1010, [11, 12]));
    assert.deepEqual(reply, Buffer.from([16, 0x03, 0xf2, 0, 2]));
    assert.deepEqual([board.get('holding', 1010), board.get('holding', 1011)], [11, 12]);
  });

  test('FC23 writes, then reads', async () => {
    const reply = await client.request(1, pdu.readWrite(1010, 2, 1011, [77]));
    assert.deepEqual(registersOf(reply), [11, 77]);
    assert.equal(board.get('holding', 1011), 77);
  });

  test('switching both interlocked outputs on at once is exception 04 and changes nothing', async () => {
    const before = board.get('holding', 1);
    const refused = server.stats.refusedWrites;
    assert.equal(exception(await client.request(1, pdu.writeCoils(0, [true, true]))), 4);
    assert.equal(exception(await client.request(1, pdu.writeRegister(1, 0b11))), 4);
    assert.equal(board.get('holding', 1), before);
    assert.equal(server.stats.refusedWrites, refused + 2);
  });

  test('write: false refuses every write with exception 01', async () => {
    const readOnly = await startModbusServer({ ...base, write: false }, gate.runtime, log);
    const other = await RawModbusClient.connect(readOnly.port);
    try {
      const before = board.get('holding', 1);
      assert.equal(exception(await other.request(1, pdu.writeCoil(3, true))), 1);
      assert.equal(exception(await other.request(1, pdu.writeRegisters(1010, [5]))), 1);
      assert.equal(board.get('holding', 1), before);
      assert.deepEqual(await other.request(1, pdu.read(3, 0, 2)), atBoard(pdu.read(3, 0, 2)));
    } finally {
      other.close();
      await readOnly.stop();
    }
  });
});

describe('the virtual unit', () => {
  test('answers the quality of each unit, 0xFFFF where none is, and 02 off its map', async () => {
    assert.deepEqual(registersOf(await client.request(250, pdu.read(3, 1, 2))), [0, 0xffff]);
    assert.deepEqual(registersOf(await client.request(250, pdu.read(4, 1, 1))), [0]);
    assert.equal(exception(await client.request(250, pdu.read(3, 999, 1))), 2);
    assert.equal(exception(await client.request(250, pdu.writeRegister(1, 1))), 1);
  });

  test('counter_total as 64 bits, big-endian, of each DI in circuit order', async () => {
    const dis = gate.runtime.slaves[0]!.devices.filter((device) => counterTotalOf(device) !== undefined);
    assert.ok(dis.length >= 2);
    const totalAt = async (n: number) => {
      const words = registersOf(await client.request(250, pdu.read(3, 1000 + 4 * n, 4)));
      return words.reduce((total, word) => total * 65536n + BigInt(word), 0n);
    };
    for (const [n, di] of dis.entries()) assert.equal(await totalAt(n), BigInt(counterTotalOf(di) ?? 0xffffffffffffffffn), di.circuit);
    assert.equal(exception(await client.request(250, pdu.read(3, 1000 + 4 * dis.length, 1))), 2);
  });

  test('a cover: its position, then its motion; 0xFFFF while the position is unknown', () => {
    const cover = (position: number | null, moving: string) => ({ full: () => ({ position, moving }) }) as unknown as Device;
    const sources = { slaves: () => [], counters: () => [], covers: () => [cover(40, 'up'), cover(null, 'unknown')] };
    const reply = serveVirtual({ fc: 4, address: 3000, quantity: 4 }, sources);
    assert.deepEqual(reply, { fc: 4, registers: [40, 1, 0xffff, 3] });
    assert.throws(() => serveVirtual({ fc: 3, address: 3004, quantity: 1 }, sources), /not in the map/);
  });
});

describe('access', () => {
  test('a client not on the allow list is disconnected at once', async () => {
    const guarded = await startModbusServer({ ...base, allow: ['10.0.0.0/24', 'fd00::/8'] }, gate.runtime, log);
    try {
      const stranger = await RawModbusClient.connect(guarded.port);
      await stranger.closedByServer();
      assert.equal(guarded.stats.refusedConnections, 1);
      assert.equal(guarded.stats.requests, 0);
    } finally {
      await guarded.stop();
    }
    const open = await startModbusServer({ ...base, allow: ['127.0.0.1'] }, gate.runtime, log);
    try {
      const friend = await RawModbusClient.connect(open.port);
      assert.deepEqual(await friend.request(1, pdu.read(3, 0, 1)), atBoard(pdu.read(3, 0, 1)));
      friend.close();
    } finally {
      await open.stop();
    }
  });
});

describe('safety: an interlocked pair through every raw path', () => {
  test('FC5, FC15, FC6 and FC16 from several clients at once never have both on at the board', async () => {
    const timeline = new OutputTimeline(board, [BRAIN_DO(1), BRAIN_DO(2)]);
    const clients = await Promise.all([1, 2, 3, 4].map(() => RawModbusClient.connect(server.port)));
    try {
      const attempts: Array<(c: RawModbusClient) => Promise<Buffer>> = [
        (c) => c.request(1, pdu.writeCoil(0, true)),
        (c) => c.request(1, pdu.writeCoil(1, true)),
        (c) => c.request(1, pdu.writeCoils(0, [true, true])),
        (c) => c.request(1, pdu.writeCoils(0, [false, true])),
        (c) => c.request(1, pdu.writeCoils(0, [true, false])),
        (c) => c.request(1, pdu.writeRegister(1, 0b11)),
        (c) => c.request(1, pdu.writeRegister(1, 0b01)),
        (c) => c.request(1, pdu.writeRegister(1, 0b10)),
        (c) => c.request(1, pdu.writeRegisters(1, [0b11])),
        (c) => c.request(1, pdu.writeRegisters(1, [0b10])),
      ];
      let accepted = 0;
      await Promise.all(
        clients.map(async (c, n) => {
          for (let round = 0; round < 15; round++) {
            const reply = await attempts[(round * 3 + n) % attempts.length]!(c);
            if (exception(reply) === undefined) accepted++;
          }
        }),
      );
      await client.request(1, pdu.writeCoils(0, [false, false]));
      const both = timeline.samples.filter((sample) => sample.on[0] && sample.on[1]);
      assert.equal(both.length, 0, `both on together at the board: ${JSON.stringify(both)}`);
      assert.ok(accepted > 0, 'some writes were accepted');
      assert.ok(timeline.samples.some((sample) => sample.on[0]) && timeline.samples.some((sample) => sample.on[1]), 'each output went on at some point');
    } finally {
      timeline.stop();
      for (const c of clients) c.close();
    }
  });
});

describe('hostile clients', () => {
  test('a protocol id that is not Modbus closes that connection only', async () => {
    const bad = await RawModbusClient.connect(server.port);
    bad.socket.write(Buffer.from([0, 1, 0, 7, 0, 6, 1, 3, 0, 0, 0, 1]));
    await bad.closedByServer();
    assert.deepEqual(await client.request(1, pdu.read(3, 0, 1)), atBoard(pdu.read(3, 0, 1)));
  });

  test('a length that lies (past the largest PDU) closes the connection', async () => {
    const bad = await RawModbusClient.connect(server.port);
    bad.socket.write(Buffer.from([0, 1, 0, 0, 0x10, 0x00, 1, 3, 0, 0, 0, 1]));
    await bad.closedByServer();
  });

  test('a frame sent one byte at a time is answered', async () => {
    const slow = await RawModbusClient.connect(server.port);
    const frame = Buffer.concat([Buffer.from([0, 9, 0, 0, 0, 6, 1]), pdu.read(3, 0, 1)]);
    const answered = new Promise<Buffer>((resolve) => slow.socket.once('data', resolve));
    for (const byte of frame) {
      slow.socket.write(Buffer.from([byte]));
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const reply = await answered;
    assert.equal(reply.readUInt16BE(0), 9);
    slow.close();
  });

  test('connections are bounded; the ones beyond the bound are closed, the others served', async () => {
    const many = await Promise.all(Array.from({ length: 40 }, () => RawModbusClient.connect(server.port)));
    try {
      // 16 per client address: every one of them comes from 127.0.0.1.
      await until(() => many.filter((c) => c.closed).length >= 40 - MAX_CONNECTIONS_PER_ADDRESS, 'connections over the bound closed');
      assert.ok(server.connections <= MAX_CONNECTIONS_PER_ADDRESS);
      const open = many.find((c) => !c.closed)!;
      assert.deepEqual(await open.request(1, pdu.read(3, 0, 1)), atBoard(pdu.read(3, 0, 1)));
    } finally {
      for (const c of many) c.close();
    }
  });

  test('a client that sends without reading is cut off; the others are served meanwhile', async () => {
    const flood = await RawModbusClient.connect(server.port);
    flood.socket.pause();
    const frame = Buffer.concat([Buffer.from([0, 1, 0, 0, 0, 6, 1]), pdu.read(3, 0, 2)]);
    const burst = Buffer.concat(Array.from({ length: 20 }, () => frame));
    for (let i = 0; i < 200 && !flood.closed; i++) {
      flood.socket.write(burst);
      if (i % 10 === 0) assert.deepEqual(await client.request(1, pdu.read(3, 0, 1)), atBoard(pdu.read(3, 0, 1)));
    }
    await flood.closedByServer();
  });
});
