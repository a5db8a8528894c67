import { test } from 'node:test';
import assert from 'node:assert/strict';
import { brain00 } from '../../../src/boards/builtin/neuron.js';
import { ModbusBus } from '../../../src/modbus/bus.js';
import { ModbusError } from '../../../src/modbus/errors.js';
import { FaultyLine } from '../../helpers/faulty-line.js';

// Every request is bounded: a silent slave costs (1 + retries) timeouts and
// then an error, never a hang; a reply lost once is recovered by one retry.

async function connectedBus(line: FaultyLine, timeoutMs: number, retries: number): Promise<ModbusBus> {
  const bus = new ModbusBus(line, { name: 'test', timeoutMs, retries });
  bus.start();
  await bus.whenConnected();
  return bus;
}

test('a silent slave fails after the timeout of every attempt, with each retry counted', async () => {
  const line = new FaultyLine([{ unit: 1, model: brain00 }]);
  line.silent.add(1);
  const bus = await connectedBus(line, 40, 2);
  const started = performance.now();
  await assert.rejects(bus.request(1, { fc: 3, address: 0, quantity: 2 }, 'poll'), (error: unknown) => {
    assert.ok(error instanceof ModbusError);
    assert.equal(error.kind, 'timeout');
    return true;
  });
  const elapsed = performance.now() - started;
  assert.ok(elapsed >= 3 * 40 - 5, `three attempts of 40 ms, took ${elapsed.toFixed(1)} ms`);
  assert.equal(line.heard.get(1), 3);
  const stats = bus.stats();
  assert.equal(stats.requests, 3);
  assert.equal(stats.timeouts, 3);
  assert.equal(stats.retries, 2);
  assert.equal(stats.responses, 0);
  assert.deepEqual(bus.unitStats(1), { requests: 3, responses: 0, timeouts: 3, retries: 2, exceptions: 0, corruptFrames: 0, lateReplies: 0, misaddressedReplies: 0 });
  await bus.stop();
});

test('a reply lost once is recovered by a retry', async () => {
  const line = new FaultyLine([{ unit: 1, model: brain00 }]);
  line.boards.get(1)!.set('holding', 0, 0x1234);
  line.replyFaults.push(() => []);
  const bus = await connectedBus(line, 100, 1);
  const response = await bus.request(1, { fc: 3, address: 0, quantity: 1 }, 'poll');
  assert.deepEqual('registers' in response && response.registers, [0x1234]);
  const stats = bus.stats();
  assert.equal(stats.requests, 2);
  assert.equal(stats.timeouts, 1);
  assert.equal(stats.retries, 1);
  assert.equal(stats.responses, 1);
  await bus.stop();
});

test('a per-request retry override of 0 makes a single attempt (offline probes)', async () => {
  const line = new FaultyLine([{ unit: 1, model: brain00 }]);
  line.silent.add(1);
  const bus = await connectedBus(line, 20, 3);
  await assert.rejects(bus.request(1, { fc: 3, address: 0, quantity: 1 }, 'poll', 0));
  assert.equal(line.heard.get(1), 1);
  assert.equal(bus.stats().retries, 0);
  await bus.stop();
});

test('writes overtake queued polls', async () => {
  const line = new FaultyLine([{ unit: 1, model: brain00 }]);
  const bus = await connectedBus(line, 100, 0);
  const order: string[] = [];
  const polls = [0, 1, 2].map((i) =>
    bus.request(1, { fc: 3, address: 0, quantity: 1 }, 'poll').then(() => order.push(`poll${i}`)),
  );
  const write = bus.request(1, { fc: 5, address: 0, value: true }, 'write').then(() => order.push('write'));
  await Promise.all([...polls, write]);
  // poll0 was already on the wire; the write goes next.
  assert.deepEqual(order, ['poll0', 'write', 'poll1', 'poll2']);
  await bus.stop();
});
