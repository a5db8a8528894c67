import assert from 'node:assert/strict';
import { createServer, connect, type AddressInfo, type Socket } from 'node:net';
import { after, test } from 'node:test';
import type { EdgeNode } from '../../../src/api/sparkplug/edge-node.js';
import type { Gate } from '../../helpers/in-process.js';
import { TestBroker } from '../../helpers/mqtt-broker.js';
import { startEdgeGate } from '../../helpers/sparkplug-gate.js';
import { TahuHost } from '../../helpers/sparkplug-host.js';

// A 3.1.1-only broker that drops an MQTT 5 CONNECT without a CONNACK (as
// RabbitMQ's MQTT plugin before 3.13 does): the edge node tries MQTT 3.1.1 with
// the same server and births there. The front below plays that broker: it
// reads each connection's CONNECT, closes it when the protocol level is 5 and
// otherwise hands the connection to a real broker (aedes).

const sockets = new Set<Socket>();
let front: ReturnType<typeof createServer> | undefined;
let broker: TestBroker | undefined;
let host: TahuHost | undefined;
let gate: Gate | undefined;
let node: EdgeNode | undefined;

after(async () => {
  await node?.stop();
  await gate?.close();
  await host?.close();
  for (const socket of sockets) socket.destroy();
  await new Promise<void>((resolve) => (front ? front.close(() => resolve()) : resolve()));
  await broker?.stop();
});

/** The protocol level of a CONNECT packet at the start of `data`, once enough of it is there. */
function protocolLevel(data: Buffer): number | undefined {
  let offset = 1;
  while (offset < data.length && offset < 5 && (data[offset]! & 0x80) !== 0) offset++;
  // Remaining length done; then a 2-byte length, "MQTT" and the level.
  const level = offset + 1 + 2 + 4;
  return data.length > level ? data[level] : undefined;
}

test('a broker that drops an MQTT 5 CONNECT is spoken to in MQTT 3.1.1, and the node is born there', { timeout: 30_000 }, async () => {
  broker = await TestBroker.start();
  const levels: number[] = [];
  front = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.once('close', () => sockets.delete(socket));
    let data = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      const level = protocolLevel(data);
      if (level === undefined) return;
      socket.off('data', onData);
      levels.push(level);
      if (level === 5) return void socket.destroy();
      const upstream = connect(broker!.port, '127.0.0.1');
      sockets.add(upstream);
      upstream.on('error', () => socket.destroy());
      socket.on('error', () => upstream.destroy());
      upstream.write(data);
      socket.pipe(upstream).pipe(socket);
    };
    socket.on('data', onData);
  });
  await new Promise<void>((resolve) => front!.listen(0, '127.0.0.1', () => resolve()));
  const url = `mqtt://127.0.0.1:${(front.address() as AddressInfo).port}`;
  host = await TahuHost.connect(broker.url, 'plant');
  ({ gate, node } = await startEdgeGate(url, 'node1'));
  await host.waitFor((m) => m.type === 'NBIRTH' && m.edgeNode === 'node1', 15_000, 'NBIRTH over MQTT 3.1.1');
  assert.deepEqual(levels, [5, 4], 'one MQTT 5 attempt, then MQTT 3.1.1 on the same server');
});
