import assert from 'node:assert/strict';
import { test } from 'node:test';
import { StoreForward } from '../../../src/api/sparkplug/store-forward.js';
import { until } from '../../helpers/in-process.js';
import { startEdgeGate } from '../../helpers/sparkplug-gate.js';
import { TestBroker } from '../../helpers/mqtt-broker.js';
import { TahuHost } from '../../helpers/sparkplug-host.js';
import { tempDir } from '../../helpers/temp-dir.js';

// Store-and-forward: changes made while the broker is away reach the host
// after the next birth as historical DDATA, every one, oldest first; the
// buffer is bounded (oldest dropped and counted) and, with `file: true`,
// survives a restart.

test('changes during a broker outage arrive after the birth as historical DDATA, in order', async () => {
  const broker = await TestBroker.start();
  const { gate, node } = await startEdgeGate(broker.url, 'sf');
  let host = await TahuHost.connect(broker.url, 'plant');
  try {
    await host.waitFor((m) => m.type === 'DBIRTH');
    await host.close();
    await broker.stop();
    await until(() => !node.stats().connected, 'the edge node to notice');
    const input = gate.runtime.registry.find('di', '1_01')!;
    const toggles = 20;
    for (let i = 0; i < toggles; i++) {
      const on = i % 2 === 0;
      gate.setInput(0, on);
      await until(() => input.full()['value'] === (on ? 1 : 0), `toggle ${i}`);
    }
    assert.ok(node.stats().bufferDepth >= toggles);
    await broker.listen();
    host = await TahuHost.connect(broker.url, 'plant');
    await host.waitFor((m) => m.type === 'NBIRTH', 20_000);
    const aliases = host.aliases('sf', '1');
    const alias = aliases.get('di/1_01/value');
    const historical = await host.waitForCount((m) => m.type === 'DDATA' && m.metrics.some((x) => x.isHistorical && x.alias === alias), 1, 10_000, 'historical DDATA');
    await until(() => node.stats().bufferDepth === 0, 'the buffer to drain');
    const values = historical
      .flatMap((m) => m.metrics)
      .filter((x) => x.isHistorical && x.alias === alias);
    assert.deepEqual(
      values.map((x) => x.value),
      Array.from({ length: toggles }, (_, i) => i % 2 === 0),
    );
    const times = values.map((x) => x.timestamp!);
    assert.deepEqual(times, [...times].sort((a, b) => a - b));
    // Replay comes after the births it refers to.
    const birth = host.of('sf', 'DBIRTH', '1')[0]!;
    assert.ok(historical[0]!.index > birth.index);
    assert.deepEqual(host.seqGaps('sf'), []);
  } finally {
    await node.stop();
    await gate.close();
    await host.close();
    await broker.stop();
  }
});

test('the buffer keeps the newest changes within its cap, counts drops, and survives a restart in its file', async () => {
  const dir = tempDir('iogate-sf-');
  const lines: string[] = [];
  const options = { memoryMb: 0.001, maxAgeS: 3600, stateDir: dir, edgeNodeKey: 'g-n', log: (_level: string, message: string) => lines.push(message) };
  const buffer = new StoreForward(options);
  const total = buffer.capacity + 5;
  for (let i = 0; i < total; i++) buffer.push({ device: '1', name: 'di/1_01/counter', datatype: 8, value: i, timestamp: Date.now() });
  assert.equal(buffer.depth, buffer.capacity);
  assert.equal(buffer.dropped, 5);
  assert.equal(lines.length, 1, 'one log line per outage');
  await buffer.flush();
  const restarted = new StoreForward(options);
  assert.equal(restarted.depth, buffer.capacity);
  const taken = restarted.take(3);
  assert.deepEqual(
    taken.map((change) => change.value),
    [5, 6, 7],
  );
});

test('changes older than max_age_s are dropped at replay', () => {
  let now = 1_000_000;
  const buffer = new StoreForward({ memoryMb: 1, maxAgeS: 10, edgeNodeKey: 'x', log: () => undefined, now: () => now, monotonicNow: () => now });
  buffer.push({ device: '1', name: 'a', datatype: 11, value: true, timestamp: now });
  now += 5000;
  buffer.push({ device: '1', name: 'a', datatype: 11, value: false, timestamp: now });
  now += 7000;
  assert.deepEqual(
    buffer.take(10).map((change) => change.value),
    [false],
  );
  assert.equal(buffer.dropped, 1);
});

test('a step of the wall clock neither drops buffered changes nor keeps them past max_age_s', () => {
  let wall = 1_700_000_000_000;
  let monotonic = 5000;
  const buffer = new StoreForward({ memoryMb: 1, maxAgeS: 10, edgeNodeKey: 'x', log: () => undefined, now: () => wall, monotonicNow: () => monotonic });
  buffer.push({ device: '1', name: 'a', datatype: 11, value: true, timestamp: wall });
  // NTP's first sync on a board without RTC: an hour forward, one second later.
  wall += 3_600_000;
  monotonic += 1000;
  assert.deepEqual(
    buffer.take(10).map((change) => change.value),
    [true],
    'a change one second old is sent, whatever the wall clock did',
  );
  assert.equal(buffer.dropped, 0);
  buffer.push({ device: '1', name: 'a', datatype: 11, value: false, timestamp: wall });
  // Back an hour, and 11 s pass: the change is too old by the monotonic clock.
  wall -= 3_600_000;
  monotonic += 11_000;
  assert.deepEqual(buffer.take(10), []);
  assert.equal(buffer.dropped, 1);
});

test('buffered changes of a device that is offline at the next birth are dropped, not replayed under its alias', async () => {
  const broker = await TestBroker.start();
  const { gate, node } = await startEdgeGate(broker.url, 'sf-offline');
  let host = await TahuHost.connect(broker.url, 'plant');
  try {
    await host.waitFor((m) => m.edgeNode === 'sf-offline' && m.type === 'DBIRTH');
    await host.close();
    await broker.stop();
    await until(() => !node.stats().connected, 'the edge node to notice');
    const input = gate.runtime.registry.find('di', '1_01')!;
    for (const on of [true, false, true]) {
      gate.setInput(0, on);
      await until(() => input.full()['value'] === (on ? 1 : 0), `the input ${on ? 'on' : 'off'}`);
    }
    assert.ok(node.stats().bufferDepth >= 3);
    // The board goes away before the broker comes back: device 1 is not born at the next birth.
    gate.board.silent = true;
    await until(() => node.model.device('1')?.online() === false, 'device 1 to be offline', 10_000);
    const buffered = node.stats().bufferDepth;
    const dropped = node.stats().bufferDropped;
    await broker.listen();
    host = await TahuHost.connect(broker.url, 'plant');
    const birth = await host.waitFor((m) => m.edgeNode === 'sf-offline' && m.type === 'NBIRTH', 20_000);
    await until(() => node.stats().bufferDepth === 0, 'the replay to finish', 10_000);
    assert.equal(node.stats().bufferDropped - dropped, buffered, 'every change of the offline device dropped and counted');
    assert.equal(node.stats().replayed, 0);
    // The board's return births device 1, published after anything the replay sent on this connection.
    gate.board.silent = false;
    const dbirth = await host.waitFor((m) => m.edgeNode === 'sf-offline' && m.type === 'DBIRTH' && m.device === '1' && m.index > birth.index, 10_000);
    const early = host.messages.filter((m) => m.edgeNode === 'sf-offline' && m.device === '1' && m.index > birth.index && m.index < dbirth.index);
    assert.deepEqual(early.map((m) => m.topic), [], 'nothing of device 1 before its DBIRTH');
    assert.deepEqual(host.seqGaps('sf-offline', birth.index), []);
  } finally {
    gate.board.silent = false;
    await node.stop();
    await gate.close();
    await host.close();
    await broker.stop();
  }
});
