import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  HEADER_BYTES,
  MAX_PAYLOAD_BYTES,
  MESSAGE,
  MessageReader,
  OwProtocolError,
  encodeReply,
  encodeRequest,
  replyText,
} from '../../../src/owserver/protocol.js';

// The owserver message format: six big-endian int32 then the payload; what
// Debian's owserver sends was checked against these layouts.

test('a READ request is a 24-byte header and the NUL-terminated path, asking for f.i.c addresses', () => {
  const bytes = encodeRequest({ type: MESSAGE.READ, path: '/28.95DCD5090000.35/temperature' });
  const path = '/28.95DCD5090000.35/temperature\0';
  assert.equal(bytes.length, HEADER_BYTES + path.length);
  assert.deepEqual(
    [0, 4, 8, 12, 16, 20].map((at) => bytes.readInt32BE(at)),
    [0, path.length, MESSAGE.READ, 0x0200_0100, 8192, 0],
  );
  assert.equal(bytes.subarray(HEADER_BYTES).toString(), path);
});

test('the reader cuts replies out of a stream split anywhere, skipping nothing', () => {
  const stream = Buffer.concat([
    encodeReply(0, Buffer.from('/28.67C6697351FF.68\0')),
    encodeReply(12, Buffer.from('     23.4375')),
    encodeReply(0, Buffer.alloc(0)),
  ]);
  for (let cut = 0; cut <= stream.length; cut++) {
    const reader = new MessageReader();
    const messages = [...reader.push(stream.subarray(0, cut)), ...reader.push(stream.subarray(cut))];
    assert.deepEqual(messages.map(replyText), ['/28.67C6697351FF.68', '     23.4375', '']);
  }
});

test('a keep-alive (payload length -1) is a message of its own with no payload', () => {
  const ping = Buffer.alloc(HEADER_BYTES);
  ping.writeInt32BE(-1, 4);
  const messages = new MessageReader().push(Buffer.concat([ping, encodeReply(3, Buffer.from('abc'))]));
  assert.deepEqual(messages.map((message) => message.payloadLength), [-1, 3]);
});

test('reply data stops at the size field (owserver counts the NUL in the payload, not in size)', () => {
  const reply = encodeReply(0, Buffer.from('/a,/b\0'));
  reply.writeInt32BE(5, 16);
  const [message] = new MessageReader().push(reply);
  assert.equal(replyText(message!), '/a,/b');
});

test('a huge length field is refused at once, without waiting for (or buffering) the payload', () => {
  const header = Buffer.alloc(HEADER_BYTES);
  header.writeInt32BE(MAX_PAYLOAD_BYTES + 1, 4);
  const reader = new MessageReader();
  assert.throws(() => reader.push(header), (error: unknown) => error instanceof OwProtocolError && /limit/.test(error.message));
  assert.throws(() => reader.push(Buffer.alloc(1)), OwProtocolError, 'a rejected stream stays rejected');
});

test('a negative length other than keep-alive, or a version other than 0, is refused', () => {
  const negative = Buffer.alloc(HEADER_BYTES);
  negative.writeInt32BE(-2, 4);
  assert.throws(() => new MessageReader().push(negative), OwProtocolError);
  const version = Buffer.alloc(HEADER_BYTES);
  version.writeInt32BE(7, 0);
  assert.throws(() => new MessageReader().push(version), OwProtocolError);
});
