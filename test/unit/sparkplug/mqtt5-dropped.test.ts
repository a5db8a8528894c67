import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { BrokerFront } from '../../helpers/broker-front.js';

// A 3.1.1-only broker that drops an MQTT 5 CONNECT without a CONNACK (as
// RabbitMQ's MQTT plugin before 3.13 does): the edge node tries MQTT 3.1.1 with
// the same server and births there. The front below plays that broker: it
// reads each connection's CONNECT, closes it when the protocol level is 5 and
// otherwise hands the connection to a real broker (aedes).

let front: BrokerFront | undefined;

after(async () => {
  await front?.stop();
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
  const levels: number[] = [];
  front = await BrokerFront.start((socket, connectUpstream) => {
    let data = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      const level = protocolLevel(data);
      if (level === undefined) return;
      socket.off('data', onData);
      levels.push(level);
      if (level === 5) return void socket.destroy();
      const upstream = connectUpstream();
      upstream.on('error', () => socket.destroy());
      socket.on('error', () => upstream.destroy());
      upstream.write(data);
      socket.pipe(upstream).pipe(socket);
    };
    socket.on('data', onData);
  });
  await front.startNode('node1');
  await front.host.waitFor((m) => m.type === 'NBIRTH' && m.edgeNode === 'node1', 15_000, 'NBIRTH over MQTT 3.1.1');
  assert.deepEqual(levels, [5, 4], 'one MQTT 5 attempt, then MQTT 3.1.1 on the same server');
});
