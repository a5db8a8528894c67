import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { after, test } from 'node:test';
import type { MqttClient } from 'mqtt';
import { UnconfirmedTail } from '../../../src/api/sparkplug/unconfirmed.js';
import { BrokerFront } from '../../helpers/broker-front.js';

// A link that goes silent (a cut cable, a network partition): nothing passes
// either way and neither end is told. DATA is QoS 0, so a change the node
// sends into the silence never reaches the broker; the node must notice the
// loss by its keep alive, walk to its next server, birth there and replay
// that change as historical. The silent link is a TCP relay in front of a
// real broker (aedes) that stops relaying without closing anything.

const NODE = 'cut1';
let front: BrokerFront | undefined;

after(async () => {
  await front?.stop();
});

test('a change sent into a link that went silent is replayed as historical after the birth on the next server', { timeout: 30_000 }, async () => {
  const link = await BrokerFront.silenceable();
  front = link.front;
  const { host } = front;
  const { gate, node } = await front.startNode(NODE, { moreServers: [front.broker.url], keepalive: 1 });
  const isOf = (type: string) => (m: { edgeNode: string; type: string }) => m.edgeNode === NODE && m.type === type;
  await host.waitFor(isOf('DBIRTH'), 10_000, 'the first DBIRTH');
  const alias = host.aliases(NODE, '1').get('di/1_01/value')!;
  const diedBdSeq = node.stats().bdSeq;

  link.silence();
  const silentAt = Date.now();
  const sentBefore = node.stats().dataMessages;
  gate.setInput(0, true);
  // Sent (into the silence) before the node can have noticed anything.
  const deadline = Date.now() + 5000;
  while (node.stats().dataMessages === sentBefore && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
  assert.ok(node.stats().dataMessages > sentBefore, 'the change went out as DDATA');
  assert.ok(node.stats().born, 'while the node still thought itself connected');

  const rebirth = await host.waitFor((m) => isOf('NBIRTH')(m) && m.receivedAt > silentAt, 10_000, 'an NBIRTH on the next server');
  assert.notEqual(rebirth.metrics.find((m) => m.name === 'bdSeq')?.value, diedBdSeq, 'a new session');
  const replay = await host.waitFor(
    (m) => isOf('DDATA')(m) && m.receivedAt > rebirth.receivedAt && m.metrics.some((x) => x.alias === alias && x.isHistorical),
    10_000,
    'the change replayed as historical DDATA',
  );
  const metric = replay.metrics.find((x) => x.alias === alias && x.isHistorical)!;
  assert.equal(metric.value, true);
  assert.ok(metric.timestamp! >= silentAt && metric.timestamp! < rebirth.receivedAt, 'with the time it was made');
  assert.equal(
    host.of(NODE, 'DDATA').filter((m) => m.receivedAt < rebirth.receivedAt && m.metrics.some((x) => x.alias === alias && x.value === true)).length,
    0,
    'the live DDATA was swallowed by the silent link (so only the replay saved it)',
  );
});

test('the unconfirmed tail: a PINGRESP confirms what was written before its PINGREQ; the tail is bounded', () => {
  const client = Object.assign(new EventEmitter(), { connected: true, sendPing: () => undefined }) as unknown as MqttClient;
  const tail = new UnconfirmedTail(3);
  tail.watch(client);
  const change = (timestamp: number) => ({ device: '1', name: 'di/1_01/value', datatype: 11, value: timestamp % 2 === 0, timestamp });
  tail.sent(change(1));
  tail.sent(change(2));
  client.emit('packetsend', { cmd: 'pingreq' });
  tail.sent(change(3));
  client.emit('packetreceive', { cmd: 'pingresp' });
  assert.equal(tail.depth, 1, 'the two written before the ping are confirmed');
  for (let t = 4; t <= 7; t++) tail.sent(change(t));
  assert.equal(tail.depth, 3);
  assert.equal(tail.overflowed, 2, 'the oldest let go when full');
  assert.deepEqual(tail.takeAll().map((c) => c.timestamp), [5, 6, 7]);
  assert.equal(tail.depth, 0);
  tail.sent(change(8));
  client.emit('packetreceive', { cmd: 'pingresp' });
  assert.equal(tail.depth, 1, 'a connection no longer watched confirms nothing');
});
