import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect as tcpConnect, type Socket } from 'node:net';
import { after, before, test } from 'node:test';
import { startGate, type Gate } from '../../helpers/in-process.js';

// The frame type on the wire. EVOK sends text frames; a binary frame reaches a
// browser as a Blob and Node-RED as a Buffer, and EVOK's clients parse
// neither. This client speaks the WebSocket handshake and framing itself, so
// no client library can hide the opcode.

let gate: Gate;

before(async () => {
  gate = await startGate();
});

after(async () => {
  await gate.close();
});

interface Frame {
  opcode: number;
  text: string;
}

const TEXT = 0x1;

/** A minimal WebSocket client: masked text frames out, every frame in with its opcode. */
async function rawClient(path: string): Promise<{ frames: Frame[]; send(text: string): void; next(limitMs?: number): Promise<Frame>; close(): void }> {
  const { port } = new URL(gate.baseUrl);
  const socket: Socket = tcpConnect(Number(port), '127.0.0.1');
  await once(socket, 'connect');
  socket.write(
    `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
      'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
  );
  const frames: Frame[] = [];
  let taken = 0;
  let buffered = Buffer.alloc(0);
  let upgraded = false;
  let wake: (() => void) | undefined;
  socket.on('data', (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    if (!upgraded) {
      const end = buffered.indexOf('\r\n\r\n');
      if (end < 0) return;
      assert.match(buffered.subarray(0, end).toString('latin1'), /^HTTP\/1\.1 101 /);
      upgraded = true;
      buffered = buffered.subarray(end + 4);
    }
    for (;;) {
      if (buffered.length < 2) break;
      let length = buffered[1]! & 0x7f;
      let offset = 2;
      if (length === 126) {
        if (buffered.length < 4) break;
        length = buffered.readUInt16BE(2);
        offset = 4;
      } else if (length === 127) {
        if (buffered.length < 10) break;
        length = Number(buffered.readBigUInt64BE(2));
        offset = 10;
      }
      if (buffered.length < offset + length) break;
      assert.equal(buffered[0]! & 0x80, 0x80, 'iogate never fragments a message');
      frames.push({ opcode: buffered[0]! & 0x0f, text: buffered.subarray(offset, offset + length).toString('utf8') });
      buffered = buffered.subarray(offset + length);
    }
    wake?.();
  });
  const send = (text: string): void => {
    const payload = Buffer.from(text);
    assert.ok(payload.length < 126);
    const mask = Buffer.from([1, 2, 3, 4]);
    const masked = Buffer.from(payload.map((byte, i) => byte ^ mask[i % 4]!));
    socket.write(Buffer.concat([Buffer.from([0x80 | TEXT, 0x80 | payload.length]), mask, masked]));
  };
  const next = async (limitMs = 5000): Promise<Frame> => {
    const deadline = Date.now() + limitMs;
    while (taken >= frames.length) {
      assert.ok(Date.now() < deadline, `no frame within ${limitMs} ms`);
      await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(resolve, 50);
      });
    }
    return frames[taken++]!;
  };
  return { frames, send, next, close: () => socket.destroy() };
}

/** Moves input 1_01 and resolves with the first frame about it. */
async function pushedInputFrame(client: Awaited<ReturnType<typeof rawClient>>): Promise<Frame> {
  const now = (await (await fetch(`${gate.baseUrl}/rest/di/1_01`)).json()).value;
  gate.setInput(0, !now);
  for (;;) {
    const frame = await client.next();
    if (frame.opcode !== TEXT || frame.text.includes('"dev":"di","circuit":"1_01"')) return frame;
  }
}

test('a push to an unfiltered client that keeps up (the shared, once-serialised batch) is a text frame', async () => {
  const client = await rawClient('/ws');
  try {
    const frame = await pushedInputFrame(client);
    assert.equal(frame.opcode, TEXT);
    assert.ok(Array.isArray(JSON.parse(frame.text)));
  } finally {
    client.close();
  }
});

test('a push to a filtered client is a text frame', async () => {
  const client = await rawClient('/ws');
  try {
    client.send('{"cmd":"filter","devices":["di"]}');
    client.send('{"cmd":"full","dev":"di","circuit":"1_02"}');
    assert.equal((await client.next()).opcode, TEXT); // the filter is in place
    const frame = await pushedInputFrame(client);
    assert.equal(frame.opcode, TEXT);
    assert.ok(Array.isArray(JSON.parse(frame.text)));
  } finally {
    client.close();
  }
});

test('replies to all, full, set and opted-in errors are text frames', async () => {
  const client = await rawClient('/ws?errors=1');
  try {
    client.send('{"cmd":"all"}');
    const all = await client.next();
    assert.equal(all.opcode, TEXT);
    assert.ok(JSON.parse(all.text).length > 10);
    client.send('{"cmd":"full","dev":"do","circuit":"1_01"}');
    const full = await client.next();
    assert.equal(full.opcode, TEXT);
    assert.equal(JSON.parse(full.text).circuit, '1_01');
    client.send('{"cmd":"set","dev":"led","circuit":"1_01","value":1}');
    const pushed = await client.next();
    assert.equal(pushed.opcode, TEXT);
    assert.equal(JSON.parse(pushed.text)[0].dev, 'led');
    client.send('{"cmd":"nonsense"}');
    const error = await client.next();
    assert.equal(error.opcode, TEXT);
    assert.equal(JSON.parse(error.text).success, false);
    assert.ok(client.frames.every((frame) => frame.opcode === TEXT));
  } finally {
    client.close();
  }
});
