import type { Socket } from 'node:net';
import { READ_TOKEN, WRITE_TOKEN, attackerSocket, closedWithin, count, letGo, runWorkers, sleep, type Target } from './common.js';
import type { Random } from './random.js';

// WebSocket at /ws: random handshakes (most of them good, the rest refused by
// iogate or by the ws library: wrong path, foreign Origin or Host, no or a
// wrong token, bad key or version), then random frames (commands, garbage,
// control frames, fragments, reserved opcodes and bits, unmasked frames, lying
// lengths), readers that never read while asking for everything, and a reset
// at random moments: right after the handshake, after the answer, mid-frame.

const COMMANDS = [
  { cmd: 'all' },
  { cmd: 'full', dev: 'do', circuit: '1_01' },
  { cmd: 'full', dev: 'ro', circuit: '2_01' },
  { cmd: 'set', dev: 'relay', circuit: '1_01', value: 1 },
  { cmd: 'set', dev: 'do', circuit: '1_02', value: 0 },
  { cmd: 'set', dev: 'ro', circuit: '2_01', value: 1 },
  { cmd: 'set', dev: 'ao', circuit: '1_01', value: 5.5 },
  { cmd: 'filter', devices: ['di', 'do'] },
  { cmd: 'filter', devices: [] },
  { cmd: 'set', dev: 'nope', circuit: 'x' },
  { cmd: 'full' },
];

function handshake(rng: Random, port: number): string {
  const query = rng.weighted<string>([[6, `?token=${rng.pick([READ_TOKEN, WRITE_TOKEN])}`], [1, `?token=${WRITE_TOKEN}&errors=1`], [1, '?token=wrong'], [1, '']]);
  const path = rng.weighted<string>([[12, '/ws'], [1, '/ws/'], [1, '/nope'], [1, '/rest/all'], [1, '/ws/x'], [1, '/%ws']]);
  const lines = [`GET ${path}${query} HTTP/1.1`];
  lines.push(`Host: ${rng.weighted([[10, `127.0.0.1:${port}`], [1, 'attacker.example'], [1, `localhost:${port}`]])}`);
  if (rng.chance(0.95)) lines.push(`Upgrade: ${rng.chance(0.95) ? 'websocket' : 'WebSocket2'}`);
  if (rng.chance(0.95)) lines.push('Connection: Upgrade');
  if (rng.chance(0.95)) lines.push(`Sec-WebSocket-Key: ${rng.chance(0.95) ? rng.bytes(16).toString('base64') : rng.pick(['', 'short', rng.bytes(40).toString('base64')])}`);
  if (rng.chance(0.95)) lines.push(`Sec-WebSocket-Version: ${rng.chance(0.95) ? '13' : rng.pick(['8', '0', 'x'])}`);
  if (rng.chance(0.15)) lines.push(`Origin: ${rng.pick([`http://127.0.0.1:${port}`, 'http://evil.example', 'null'])}`);
  if (rng.chance(0.1)) lines.push(`Authorization: Bearer ${rng.pick([WRITE_TOKEN, 'nope'])}`);
  if (rng.chance(0.1)) lines.push(`Sec-WebSocket-Extensions: ${rng.pick(['permessage-deflate; client_max_window_bits', 'x-unknown', 'permessage-deflate; server_max_window_bits=1'])}`);
  if (rng.chance(0.05)) lines.push(`Sec-WebSocket-Protocol: ${rng.pick(['chat', '', ',,,'])}`);
  return `${lines.join('\r\n')}\r\n\r\n`;
}

/** A frame as a client sends it (masked), or not quite. */
export function frame(rng: Random, opcode: number, payload: Buffer, { fin = true, masked = true, rsv = 0, lie = 0 } = {}): Buffer {
  const length = Math.max(0, payload.length + lie);
  const head: number[] = [(fin ? 0x80 : 0) | (rsv << 4) | (opcode & 0x0f)];
  const mask = masked ? 0x80 : 0;
  if (length < 126) head.push(mask | length);
  else if (length < 0x10000) head.push(mask | 126, length >> 8, length & 0xff);
  else {
    head.push(mask | 127);
    const big = Buffer.alloc(8);
    big.writeBigUInt64BE(BigInt(length));
    if (rng.chance(0.1)) big[0] = 0x80; // a length with its top bit set
    head.push(...big);
  }
  if (!masked) return Buffer.concat([Buffer.from(head), payload]);
  const key = rng.bytes(4);
  const body = Buffer.from(payload);
  for (let i = 0; i < body.length; i++) body[i]! ^= key[i & 3]!;
  return Buffer.concat([Buffer.from(head), key, body]);
}

function randomFrame(rng: Random): Buffer {
  const command = () => Buffer.from(JSON.stringify(rng.pick(COMMANDS)));
  return rng.weighted<() => Buffer>([
    [10, () => frame(rng, 1, command())],
    [2, () => frame(rng, 1, rng.bytes(rng.length(2048)))],
    [2, () => frame(rng, 2, rng.bytes(rng.length(2048)))],
    [2, () => frame(rng, 9, rng.bytes(rng.int(0, 125)))],
    [1, () => frame(rng, 10, rng.bytes(rng.int(0, 125)))],
    [1, () => frame(rng, 9, rng.bytes(rng.int(126, 300)))],
    [1, () => frame(rng, 8, Buffer.concat([Buffer.from([rng.int(0, 255), rng.int(0, 255)]), rng.bytes(rng.int(0, 20))]))],
    [2, () => Buffer.concat([frame(rng, 1, Buffer.from('{"cmd":'), { fin: false }), frame(rng, rng.pick([0, 0, 1, 9]), Buffer.from('"all"}'))])],
    [1, () => frame(rng, 0, rng.bytes(rng.int(0, 100)))],
    [1, () => frame(rng, rng.pick([3, 4, 5, 6, 7, 11, 12, 13, 14, 15]), rng.bytes(rng.int(0, 50)))],
    [1, () => frame(rng, 1, command(), { rsv: rng.int(1, 7) })],
    [1, () => frame(rng, 1, command(), { masked: false })],
    [1, () => frame(rng, 1, Buffer.alloc(rng.int(65_000, 70_000), 0x20))],
    [1, () => frame(rng, 2, rng.bytes(rng.int(0, 64)), { lie: rng.int(1, 1_000_000) })],
    [1, () => frame(rng, 1, Buffer.from([0xc3, 0x28, 0xa0, 0xa1]))],
  ])();
}

/** The status of the handshake's answer (0: none in time or closed). */
function answerStatus(socket: Socket, ms: number): Promise<number> {
  return new Promise((resolve) => {
    let head = '';
    const done = (status: number) => {
      clearTimeout(timer);
      socket.off('data', onData);
      socket.off('close', onClose);
      resolve(status);
    };
    const onData = (chunk: Buffer) => {
      head += chunk.toString('latin1');
      const match = /^HTTP\/1\.1 (\d{3})/.exec(head);
      if (match) done(Number(match[1]));
      else if (head.length > 4096) done(0);
    };
    const onClose = () => done(0);
    const timer = setTimeout(() => done(0), ms);
    socket.on('data', onData);
    socket.once('close', onClose);
  });
}

export async function wsAttack(target: Target, rng: Random, workers: number): Promise<void> {
  const { counts } = target;
  await runWorkers(target, rng, 'ws', workers, async (rng) => {
    const socket = await attackerSocket(target, rng, 'ws');
    if (!socket) return;
    socket.write(handshake(rng, target.port));
    // A reset right after the handshake, before any answer.
    if (rng.chance(0.1)) {
      await sleep(rng.int(0, 5));
      socket.resetAndDestroy();
      count(counts, 'ws.reset_after_handshake');
      return;
    }
    const status = await answerStatus(socket, 2000);
    count(counts, status === 101 ? 'ws.accepted' : `ws.refused`);
    if (status !== 101 || rng.chance(0.1)) {
      // Refused (or accepted and left at once): often a reset, as the crash of issue 27 needs.
      if (rng.chance(0.5)) await sleep(rng.int(0, 50));
      count(counts, `ws.let_go.${letGo(socket, rng)}`);
      return;
    }
    const paused = rng.chance(0.15);
    if (paused) {
      socket.pause();
      count(counts, 'ws.paused_readers');
    } else socket.resume();
    const frames = paused ? rng.int(20, 400) : rng.weighted([[5, rng.int(1, 10)], [3, rng.int(10, 100)], [1, rng.int(100, 1000)]]);
    for (let i = 0; i < frames && !socket.destroyed && !target.stopped(); i++) {
      const bytes = paused && rng.chance(0.8) ? frame(rng, 1, Buffer.from('{"cmd":"all"}')) : randomFrame(rng);
      if (rng.chance(0.01)) {
        // Mid-frame: part of it, then a reset.
        socket.write(bytes.subarray(0, rng.int(1, Math.max(1, bytes.length - 1))));
        await sleep(rng.int(0, 20));
        socket.resetAndDestroy();
        count(counts, 'ws.reset_mid_frame');
        return;
      }
      socket.write(bytes);
      count(counts, 'ws.frames');
      if (rng.chance(0.2)) await sleep(rng.int(0, 10));
      // The daemon stopped taking bytes (it reads no more from a client it is still answering): enough.
      if (socket.writableLength > 256 * 1024) break;
    }
    await closedWithin(socket, rng.int(0, 500));
    count(counts, `ws.let_go.${letGo(socket, rng)}`);
  });
}
