import assert from 'node:assert/strict';
import { test } from 'node:test';
import mqttPacket from 'mqtt-packet';
import { MAX_INCOMING_PACKET_BYTES } from '../../../src/api/mqtt/connection.js';
import { PacketSizeGuard, isOversizeMarker } from '../../../src/api/mqtt/size-guard.js';
import { TestBroker } from '../../helpers/mqtt-broker.js';
import { startGateway } from '../../helpers/mqtt-gateway.js';
import { Observer } from '../../helpers/mqtt-observer.js';

// Size bounds on what the broker sends, and what retained commands do on a
// 3.1.1 broker (aedes speaks only 3.1.1; Mosquitto, in the interop suite,
// covers MQTT 5 and 3.1.1 with a 50 MB publish).

const DO_REGISTER = 1;

interface Parsed {
  cmd: string;
  topic?: string;
  payload?: Buffer;
  messageId?: number;
  retain?: boolean;
  qos?: number;
}

/** Sends `packets` through a guard in chunks of `chunk` bytes; returns what mqtt-packet parses from its output and the largest piece it pushed. */
function throughGuard(bytes: Buffer, chunk: number, version: 4 | 5): { packets: Parsed[]; largestPush: number } {
  const guard = new PacketSizeGuard(MAX_INCOMING_PACKET_BYTES, () => version);
  const parser = mqttPacket.parser({ protocolVersion: version });
  const packets: Parsed[] = [];
  let largestPush = 0;
  parser.on('packet', (packet) => void packets.push(packet as unknown as Parsed));
  parser.on('error', (error: Error) => assert.fail(error));
  guard.on('data', (data: Buffer) => {
    largestPush = Math.max(largestPush, data.length);
    parser.parse(data);
  });
  for (let at = 0; at < bytes.length; at += chunk) guard.write(bytes.subarray(at, at + chunk));
  return { packets, largestPush };
}

function publishBytes(topic: string, payload: Buffer, options: { qos: 0 | 1 | 2; messageId?: number; retain?: boolean }, version: 4 | 5): Buffer {
  return mqttPacket.generate({ cmd: 'publish', topic, payload, qos: options.qos, messageId: options.messageId, retain: options.retain ?? false, dup: false }, { protocolVersion: version });
}

for (const version of [4, 5] as const) {
  test(`MQTT ${version === 5 ? '5' : '3.1.1'}: a 50 MB publish passes the guard as its topic and packet id with a marker, never held; packets around it pass unchanged`, () => {
    const sequence = (big: Buffer): Buffer =>
      Buffer.concat([
        publishBytes('plc/cmd/do/1_01', Buffer.from('{"value":1}'), { qos: 0 }, version),
        publishBytes('plc/cmd/do/1_02', big, { qos: 1, messageId: 7, retain: true }, version),
        publishBytes('plc/cmd/do/1_03', Buffer.from('ON'), { qos: 2, messageId: 8 }, version),
        mqttPacket.generate({ cmd: 'pingresp' }, { protocolVersion: version }),
      ]);
    const fifty = sequence(Buffer.alloc(50 * 1024 * 1024, 0x31));
    // One byte at a time through 50 MB is slow for no gain: just past the bound does for that.
    const justOver = sequence(Buffer.alloc(MAX_INCOMING_PACKET_BYTES, 0x31));
    for (const chunk of [1, 7, 65536]) {
      const input = chunk === 1 ? justOver : fifty;
      const { packets, largestPush } = throughGuard(input, chunk, version);
      assert.ok(largestPush <= Math.max(chunk, 64), `never more than a read's worth pushed at once (${largestPush})`);
      const publishes = packets.filter((packet) => packet.cmd === 'publish');
      assert.equal(publishes[0]!.payload!.toString(), '{"value":1}');
      assert.equal(publishes[1]!.topic, 'plc/cmd/do/1_02');
      assert.equal(publishes[1]!.messageId, 7, 'still acknowledged at its QoS');
      assert.equal(publishes[1]!.retain, true);
      assert.ok(isOversizeMarker(publishes[1]!.payload!), 'the payload replaced by the marker');
      assert.equal(publishes[2]!.payload!.toString(), 'ON');
      assert.equal(packets.at(-1)!.cmd, 'pingresp');
    }
  });
}

test('3.1.1: a command larger than the bound is answered 413 and not carried out; the next command works', async () => {
  const broker = await TestBroker.start();
  const gateway = await startGateway({ port: broker.port, clientId: 'big', extra: '    qos: 1' });
  const client = await Observer.connect(broker.url, ['big/ack/#', 'big/status']);
  try {
    await client.waitFor('big/status', (text) => text === 'online');
    await client.publish('big/cmd/do/1_01', `{"value": 1, "pad": "${'x'.repeat(1024 * 1024)}"}`, { qos: 1 });
    const refused = await client.waitForJson('big/ack/do/1_01');
    assert.equal(refused.success, false);
    assert.match(refused.errors.InvalidPayload, /exceeds/);
    assert.equal(gateway.board.get('holding', DO_REGISTER) & 1, 0, 'the output stayed off');
    client.forget();
    await client.publish('big/cmd/do/1_01', '1', { qos: 1 });
    assert.equal((await client.waitForJson('big/ack/do/1_01')).result.value, 1);
    assert.ok(gateway.log.some((line) => /exceeds \d+ and was dropped unread/.test(line)));
  } finally {
    await client.close();
    await gateway.stop();
    await broker.stop();
  }
});

test('3.1.1: a retained command published while iogate is connected arrives without its flag and is carried out (the documented limit); the same one replayed later is refused', async () => {
  const broker = await TestBroker.start();
  const gateway = await startGateway({ port: broker.port, clientId: 'keep' });
  const client = await Observer.connect(broker.url, ['keep/ack/#', 'keep/status']);
  try {
    await client.waitFor('keep/status', (text) => text === 'online');
    await client.publish('keep/cmd/do/1_01', '1', { qos: 1, retain: true });
    assert.equal((await client.waitForJson('keep/ack/do/1_01')).success, true, '3.1.1 cannot tell it from a live command');
    assert.equal(gateway.board.get('holding', DO_REGISTER) & 1, 1);
    await gateway.stop();
    client.forget();
    const second = await startGateway({ port: broker.port, clientId: 'keep' });
    try {
      const replay = await client.waitForJson('keep/ack/do/1_01');
      assert.equal(replay.success, false);
      assert.ok(replay.errors.RetainedCommand);
      assert.equal(second.board.get('holding', DO_REGISTER) & 1, 0, 'the replay switched nothing');
    } finally {
      await client.publish('keep/cmd/do/1_01', '', { qos: 1, retain: true });
      await second.stop();
    }
  } finally {
    await client.close();
    await broker.stop();
  }
});

test('protocol auto: a broker that refuses MQTT 5 is spoken to in 3.1.1, and commands work', async () => {
  const broker = await TestBroker.start();
  const gateway = await startGateway({ port: broker.port, clientId: 'auto', protocol: 'auto' });
  const client = await Observer.connect(broker.url, ['auto/ack/#', 'auto/status']);
  try {
    await client.waitFor('auto/status', (text) => text === 'online');
    assert.ok(gateway.log.some((line) => /does not speak MQTT 5; using 3\.1\.1/.test(line)));
    await client.publish('auto/cmd/do/1_02', 'ON', { qos: 1 });
    assert.equal((await client.waitForJson('auto/ack/do/1_02')).result.value, 1);
  } finally {
    await client.close();
    await gateway.stop();
    await broker.stop();
  }
});
