import { test } from 'node:test';
import assert from 'node:assert/strict';
import { brain00 } from '../../../src/boards/builtin/neuron.js';
import { ModbusBus, type BusOptions } from '../../../src/modbus/bus.js';
import { ModbusError } from '../../../src/modbus/errors.js';
import { FaultyLine } from '../../helpers/faulty-line.js';

// The bus queue under faults: requests carry a deadline across their retries
// and their client's abort signal, and both are honoured before anything goes
// on the wire; writes to different slaves take turns, and a slave's waiting
// poll goes between two writes to it.

const POLL = { fc: 3, address: 0, quantity: 1 } as const;
const write = (address: number) => ({ fc: 5, address, value: true }) as const;

async function connectedBus(line: FaultyLine, options: Partial<BusOptions> = {}): Promise<ModbusBus> {
  const bus = new ModbusBus(line, { name: 'test', timeoutMs: 500, retries: 0, ...options });
  bus.start();
  await bus.whenConnected();
  return bus;
}

function kindOf(promise: Promise<unknown>): Promise<string> {
  return promise.then(
    () => 'ok',
    (error: unknown) => (error instanceof ModbusError ? error.kind : `unexpected ${String(error)}`),
  );
}


/** A connected bus with slaves 1 and 2, and the order in which tracked requests completed. */
async function orderRig() {
  const line = new FaultyLine([
    { unit: 1, model: brain00 },
    { unit: 2, model: brain00 },
  ]);
  const bus = await connectedBus(line);
  const order: string[] = [];
  const track = (label: string, promise: Promise<unknown>) => promise.then(() => order.push(label));
  return { line, bus, order, track };
}

test('a queued write whose client left is dropped before the wire; one already sent completes', async () => {
  const line = new FaultyLine([{ unit: 1, model: brain00 }]);
  line.replyDelayMs.set(1, 30);
  const bus = await connectedBus(line);
  const first = new AbortController();
  const second = new AbortController();
  const sent = kindOf(bus.request(1, write(0), 'write', { signal: first.signal }));
  const queued = kindOf(bus.request(1, write(1), 'write', { signal: second.signal }));
  assert.equal(bus.queuedWrites, 1);
  first.abort();
  second.abort();
  assert.equal(await queued, 'cancelled');
  assert.equal(await sent, 'ok', 'the write on the wire is not cut off: its reply keeps the cache true');
  assert.equal(line.heardWrites.get(1), 1);
  assert.equal(bus.stats().dropped, 1);
  await assert.rejects(bus.request(1, write(2), 'write', { signal: second.signal }), /was not sent/);
  await bus.stop();
});

test('a write that waited past its deadline is not sent and says so', async () => {
  const line = new FaultyLine([{ unit: 1, model: brain00 }]);
  line.replyDelayMs.set(1, 100);
  const bus = await connectedBus(line, { deadlineMs: 150 });
  const outcomes = await Promise.all([0, 1, 2].map((address) => kindOf(bus.request(1, write(address), 'write'))));
  assert.equal(outcomes[0], 'ok');
  assert.equal(outcomes[2], 'expired', 'the third write would have gone at 200 ms at the earliest');
  const sentWrites = outcomes.filter((outcome) => outcome === 'ok').length;
  assert.equal(line.heardWrites.get(1), sentWrites, 'only the writes that answered went on the wire');
  await bus.stop();
});

test('the deadline bounds a request across its retries', async () => {
  const line = new FaultyLine([{ unit: 1, model: brain00 }]);
  line.silent.add(1);
  const bus = await connectedBus(line, { timeoutMs: 40, retries: 10, deadlineMs: 100 });
  await assert.rejects(bus.request(1, POLL, 'poll'), (error: unknown) => error instanceof ModbusError && error.kind === 'timeout');
  const attempts = line.heard.get(1)!;
  assert.ok(attempts >= 1 && attempts <= 3, `${attempts} attempts within a 100 ms deadline of 40 ms timeouts, not 11`);
  await bus.stop();
});

test('a write that times out after it was sent says the slave may or may not have applied it', async () => {
  const line = new FaultyLine([{ unit: 1, model: brain00 }]);
  line.silent.add(1);
  const bus = await connectedBus(line, { timeoutMs: 30 });
  await assert.rejects(bus.request(1, write(0), 'write'), (error: unknown) => {
    assert.ok(error instanceof ModbusError, String(error));
    assert.equal(error.kind, 'timeout');
    assert.match(error.message, /did not answer within 30 ms; it may or may not have applied the write/);
    return true;
  });
  await bus.stop();
});

test('a link lost with a write on the wire is an unknown outcome; queued writes are refused as not sent', async () => {
  const line = new FaultyLine([{ unit: 1, model: brain00 }]);
  line.replyDelayMs.set(1, 50);
  const bus = await connectedBus(line, { reconnectMs: 10 });
  const onWire = bus.request(1, write(0), 'write').catch((error: ModbusError) => error);
  const queued = bus.request(1, write(1), 'write').catch((error: ModbusError) => error);
  await new Promise((resolve) => setTimeout(resolve, 10));
  line.vanish();
  const [lost, refused] = await Promise.all([onWire, queued]);
  assert.ok(lost instanceof ModbusError && refused instanceof ModbusError, `${String(lost)} / ${String(refused)}`);
  assert.equal(lost.kind, 'unknown');
  assert.match(lost.message, /may or may not have applied/);
  assert.equal(refused.kind, 'disconnected');
  assert.match(refused.message, /was not sent/);
  await bus.stop();
});

test('polls queued when the link drops wait for the reconnect; only the one on the wire fails', async () => {
  const line = new FaultyLine([
    { unit: 1, model: brain00 },
    { unit: 2, model: brain00 },
    { unit: 3, model: brain00 },
  ]);
  line.replyDelayMs.set(1, 50);
  const bus = await connectedBus(line, { reconnectMs: 10 });
  const outcomes = [1, 2, 3].map((unit) => kindOf(bus.request(unit, POLL, 'poll')));
  await new Promise((resolve) => setTimeout(resolve, 10));
  line.vanish();
  assert.deepEqual(await Promise.all(outcomes), ['unknown', 'ok', 'ok']);
  assert.equal(bus.stats().reconnects, 1);
  await bus.stop();
});

test('writes to different slaves take turns, and a slave that got a write has its waiting poll sent before its next write', async () => {
  const { bus, order, track } = await orderRig();
  const all = [
    track('poll2-first', bus.request(2, POLL, 'poll')),
    track('poll2', bus.request(2, POLL, 'poll')),
    track('poll1', bus.request(1, POLL, 'poll')),
    track('write1a', bus.request(1, write(0), 'write')),
    track('write1b', bus.request(1, write(1), 'write')),
    track('write1c', bus.request(1, write(2), 'write')),
    track('write2', bus.request(2, write(0), 'write')),
  ];
  await Promise.all(all);
  // Before: write1a, poll2, write1b, poll1, write1c, write2 (a batch to slave 1 held slave 2's write back
  // and slave 1's poll waited for two of its writes).
  assert.deepEqual(order, ['poll2-first', 'write1a', 'poll2', 'write2', 'poll1', 'write1b', 'write1c']);
  await bus.stop();
});

test('an input read goes ahead of queued polls and writes, but never twice in a row while others wait', async () => {
  const { line, bus, order, track } = await orderRig();
  const all = [
    track('poll2-on-the-wire', bus.request(2, POLL, 'poll')),
    track('poll2', bus.request(2, POLL, 'poll')),
    track('write1', bus.request(1, write(0), 'write')),
    track('input1', bus.request(1, POLL, 'input')),
    track('input2', bus.request(2, POLL, 'input')),
  ];
  await Promise.all(all);
  // As ordinary polls the input reads went last: poll2-on-the-wire, write1, poll2, input1, input2.
  assert.deepEqual(order, ['poll2-on-the-wire', 'input1', 'write1', 'input2', 'poll2']);
  assert.equal(line.heard.get(1)! + line.heard.get(2)!, 5);
  await bus.stop();
});

test('input reads asked for back to back leave every other turn to the scans', async () => {
  const line = new FaultyLine([{ unit: 1, model: brain00 }]);
  const bus = await connectedBus(line);
  const order: string[] = [];
  const track = (label: string, promise: Promise<unknown>) => promise.then(() => order.push(label));
  const all = [track('poll-on-the-wire', bus.request(1, POLL, 'poll'))];
  for (let i = 0; i < 3; i++) all.push(track('poll', bus.request(1, POLL, 'poll')));
  for (let i = 0; i < 4; i++) all.push(track('input', bus.request(1, POLL, 'input')));
  await Promise.all(all);
  assert.deepEqual(order, ['poll-on-the-wire', 'input', 'poll', 'input', 'poll', 'input', 'poll', 'input']);
  await bus.stop();
});

test('input reads between writes do not let the writes hold the scans back', async () => {
  const { bus, order, track } = await orderRig();
  const all = [track('poll-on-the-wire', bus.request(1, POLL, 'poll'))];
  all.push(track('write', bus.request(2, write(0), 'write')), track('write', bus.request(2, write(1), 'write')));
  all.push(track('poll', bus.request(1, POLL, 'poll')), track('poll', bus.request(1, POLL, 'poll')));
  for (let i = 0; i < 3; i++) all.push(track('input', bus.request(1, POLL, 'input')));
  await Promise.all(all);
  // Had the input reads counted as the polls' turn, both writes would have gone before any poll.
  assert.deepEqual(order, ['poll-on-the-wire', 'input', 'write', 'input', 'poll', 'input', 'write', 'poll']);
  await bus.stop();
});

test('a full write queue refuses more as busy instead of growing', async () => {
  const line = new FaultyLine([{ unit: 1, model: brain00 }]);
  line.replyDelayMs.set(1, 20);
  const bus = await connectedBus(line, { maxQueued: 2 });
  const outcomes = await Promise.all([0, 1, 2, 3].map((address) => kindOf(bus.request(1, write(address), 'write'))));
  assert.deepEqual(outcomes, ['ok', 'ok', 'ok', 'busy']);
  await bus.stop();
});
