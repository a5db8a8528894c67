import { test } from 'node:test';
import assert from 'node:assert/strict';
import { brain00 } from '../../../src/boards/builtin/neuron.js';
import { ModbusBus } from '../../../src/modbus/bus.js';
import { encodeRtu } from '../../../src/modbus/rtu-framer.js';
import { FaultyLine } from '../../helpers/faulty-line.js';

// Line noise on RS485: corrupted, fragmented, garbage-prefixed and
// concatenated replies. Each is counted where it is detectable and the
// transaction still completes with the right registers.
//
// The timeout is generous so that a loaded machine never turns a delayed but
// intact reply into a timeout; where a test says "without a timeout" it checks
// the counter, not the clock.

const READ = { fc: 3, address: 0, quantity: 2 } as const;

async function setup(): Promise<{ line: FaultyLine; bus: ModbusBus }> {
  const line = new FaultyLine([{ unit: 1, model: brain00 }]);
  line.boards.get(1)!.set('holding', 0, 0xbeef);
  line.boards.get(1)!.set('holding', 1, 0x0042);
  const bus = new ModbusBus(line, { name: 'noisy', timeoutMs: 250, retries: 2 });
  bus.start();
  await bus.whenConnected();
  return { line, bus };
}

async function readsRight(bus: ModbusBus): Promise<void> {
  const response = await bus.request(1, READ, 'poll');
  assert.ok('registers' in response);
  assert.deepEqual(response.registers, [0xbeef, 0x0042]);
}

test('a reply with a bad CRC is counted, dropped and the retry succeeds', async () => {
  const { line, bus } = await setup();
  line.replyFaults.push((frame) => {
    const bad = Buffer.from(frame);
    bad[bad.length - 1]! ^= 0xff;
    return [bad];
  });
  await readsRight(bus);
  const stats = bus.stats();
  assert.ok(stats.corruptFrames >= 1, `CRC error counted (${stats.corruptFrames})`);
  assert.equal(stats.retries, 1);
  assert.equal(bus.unitStats(1).corruptFrames, stats.corruptFrames, 'charged to the unit on the wire');
  await bus.stop();
});

test('a reply trickling in byte by byte is reassembled without a retry', async () => {
  const { line, bus } = await setup();
  line.replyFaults.push((frame) => [...frame].map((byte) => Buffer.from([byte])));
  await readsRight(bus);
  assert.equal(bus.stats().retries, 0);
  assert.equal(bus.stats().corruptFrames, 0);
  await bus.stop();
});

test('garbage in front of a reply is skipped without waiting for a timeout', async () => {
  const { line, bus } = await setup();
  line.replyFaults.push((frame) => [Buffer.concat([Buffer.from([0x00, 0xff, 0x13, 0x37, 0x01]), frame])]);
  await readsRight(bus);
  assert.equal(bus.stats().timeouts, 0, 'resynchronised on the reply itself');
  assert.equal(bus.stats().retries, 0);
  await bus.stop();
});

test("another unit's frame glued in front of ours is ignored; ours is taken", async () => {
  const { line, bus } = await setup();
  const stranger = encodeRtu(9, Buffer.from([3, 4, 0, 0, 0, 0]));
  line.replyFaults.push((frame) => [Buffer.concat([stranger, frame])]);
  await readsRight(bus);
  assert.equal(bus.stats().timeouts, 0);
  assert.equal(bus.stats().responses, 1);
  await bus.stop();
});

test('a truncated reply times out, is counted, and the retry succeeds', async () => {
  const { line, bus } = await setup();
  line.replyFaults.push((frame) => [frame.subarray(0, frame.length - 3)]);
  await readsRight(bus);
  assert.equal(bus.stats().timeouts, 1);
  assert.equal(bus.stats().retries, 1);
  await bus.stop();
});

test('bytes arriving while no request is out are dropped and do not spoil the next reply', async () => {
  const { line, bus } = await setup();
  await readsRight(bus);
  // The tail of some earlier reply, with nothing outstanding.
  line.inject(Buffer.from([0x01, 0x03, 0x04, 0xbe]));
  await new Promise((resolve) => setImmediate(resolve));
  await readsRight(bus);
  assert.equal(bus.stats().timeouts, 0);
  await bus.stop();
});
