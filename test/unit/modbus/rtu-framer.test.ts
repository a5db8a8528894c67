import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RtuFramer, encodeRtu, rtuSilenceMs } from '../../../src/modbus/rtu-framer.js';

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex');

// Complete ADUs from the Modbus serial line spec and common references.
const READ_REQUEST = '11 03 00 6B 00 03 76 87';
const READ_REPLY = '11 03 06 AE 41 56 52 43 40 49 AD';
const READ_10_REQUEST = '01 03 00 00 00 0A C5 CD';

interface Frame {
  unit: number;
  pdu: string;
}

function collect(kind: 'request' | 'response'): { framer: RtuFramer; frames: Frame[] } {
  const frames: Frame[] = [];
  const framer = new RtuFramer(kind, (unit, pdu) => frames.push({ unit, pdu: pdu.toString('hex').toUpperCase() }));
  return { framer, frames };
}

test('encodeRtu appends the CRC low byte first', () => {
  assert.deepEqual(encodeRtu(0x11, hex('03006B0003')), hex(READ_REQUEST));
  assert.deepEqual(encodeRtu(1, hex('030000000A')), hex(READ_10_REQUEST));
  assert.deepEqual(encodeRtu(0x11, hex('0306AE4156524340')), hex(READ_REPLY));
});

test('encodeRtu range errors', () => {
  assert.throws(() => encodeRtu(256, hex('03')), RangeError);
  assert.throws(() => encodeRtu(-1, hex('03')), RangeError);
  assert.throws(() => encodeRtu(1, Buffer.alloc(0)), RangeError);
  assert.throws(() => encodeRtu(1, Buffer.alloc(254)), RangeError);
});

test('one request in one chunk', () => {
  const { framer, frames } = collect('request');
  framer.push(hex(READ_REQUEST));
  assert.deepEqual(frames, [{ unit: 0x11, pdu: '03006B0003' }]);
  assert.equal(framer.buffered, 0);
  assert.deepEqual(framer.stats, { frames: 1, crcErrors: 0, discardedBytes: 0 });
});

test('a reply fed byte by byte is delivered once, on its last byte', () => {
  const { framer, frames } = collect('response');
  const adu = hex(READ_REPLY);
  for (let i = 0; i < adu.length; i++) {
    framer.push(adu.subarray(i, i + 1));
    assert.equal(frames.length, i === adu.length - 1 ? 1 : 0, `after byte ${i}`);
  }
  assert.deepEqual(frames, [{ unit: 0x11, pdu: '0306AE4156524340' }]);
  assert.equal(framer.buffered, 0);
});

test('several frames concatenated in one chunk, then split at odd places', () => {
  const stream = Buffer.concat([
    hex(READ_REQUEST),
    hex(READ_10_REQUEST),
    encodeRtu(7, hex('100001000204000A0102')),
    encodeRtu(0, hex('0500ACFF00')),
  ]);
  const expected = [
    { unit: 0x11, pdu: '03006B0003' },
    { unit: 1, pdu: '030000000A' },
    { unit: 7, pdu: '100001000204000A0102' },
    { unit: 0, pdu: '0500ACFF00' },
  ];
  const whole = collect('request');
  whole.framer.push(stream);
  assert.deepEqual(whole.frames, expected);

  for (const cut of [1, 3, 7, 9, 15, 20]) {
    const split = collect('request');
    split.framer.push(stream.subarray(0, cut));
    split.framer.push(stream.subarray(cut));
    assert.deepEqual(split.frames, expected, `cut at ${cut}`);
  }
});

test('corrupted CRC is rejected and counted; the next good frame still arrives', () => {
  const { framer, frames } = collect('request');
  const bad = hex(READ_REQUEST);
  bad[7] = 0x88;
  framer.push(Buffer.concat([bad, hex(READ_10_REQUEST)]));
  assert.deepEqual(frames, [{ unit: 1, pdu: '030000000A' }]);
  assert.ok(framer.stats.crcErrors >= 1);
  assert.equal(framer.stats.discardedBytes, bad.length);
  assert.equal(framer.stats.frames, 1);
});

test('corrupted payload byte is rejected', () => {
  const { framer, frames } = collect('response');
  const bad = hex(READ_REPLY);
  bad[4] ^= 0x10;
  framer.push(bad);
  assert.equal(frames.length, 0);
  assert.ok(framer.stats.crcErrors >= 1);
});

test('garbage before a frame is skipped byte by byte', () => {
  const { framer, frames } = collect('response');
  // 0x00, 0x11 and 0x7F are not function codes; "11 03 FF" announces 255 data bytes, more than an ADU holds.
  framer.push(Buffer.concat([hex('FF 00 11 03 FF'), hex(READ_REPLY)]));
  framer.reset();
  framer.push(Buffer.concat([hex('FF 00 07'), hex(READ_REPLY)]));
  const reply = { unit: 0x11, pdu: '0306AE4156524340' };
  assert.deepEqual(frames, [reply, reply]);
  assert.equal(framer.stats.discardedBytes, 5 + 3);
});

test('garbage that announces an impossible length is skipped', () => {
  const { framer, frames } = collect('response');
  // "03 00 03 FF": FC3 reply with 255 data bytes cannot fit an RTU ADU.
  framer.push(Buffer.concat([hex('03 FF'), hex(READ_REPLY)]));
  assert.deepEqual(frames, [{ unit: 0x11, pdu: '0306AE4156524340' }]);
  assert.equal(framer.stats.discardedBytes, 2);
});

test('garbage with a plausible header overlapping the real frame is resolved by the CRC', () => {
  const { framer, frames } = collect('response');
  // "01 03 02" claims a 7-byte reply that swallows the start of the real one.
  framer.push(Buffer.concat([hex('01 03 02'), hex(READ_REPLY)]));
  assert.deepEqual(frames, [{ unit: 0x11, pdu: '0306AE4156524340' }]);
  assert.equal(framer.stats.discardedBytes, 3);
  assert.ok(framer.stats.crcErrors >= 1);

  const slow = collect('response');
  const stream = Buffer.concat([hex('01 03 02'), hex(READ_REPLY), hex(READ_REPLY)]);
  for (let i = 0; i < stream.length; i++) slow.framer.push(stream.subarray(i, i + 1));
  assert.equal(slow.frames.length, 2);
  assert.equal(slow.framer.buffered, 0);
});

test('in sync, a partial frame is waited for even if its data looks like a frame', () => {
  const { framer, frames } = collect('response');
  // A register reply whose data happens to contain a complete, valid exception ADU.
  const embedded = encodeRtu(1, hex('8302'));
  const data = Buffer.concat([embedded, hex('0000 0000 00')]);
  const long = encodeRtu(1, Buffer.concat([hex('03 0A'), data]));
  framer.push(long.subarray(0, 3 + embedded.length));
  assert.equal(frames.length, 0);
  framer.push(long.subarray(3 + embedded.length));
  assert.deepEqual(frames, [{ unit: 1, pdu: Buffer.concat([hex('03 0A'), data]).toString('hex').toUpperCase() }]);
  assert.equal(framer.stats.discardedBytes, 0);
});

test('a partial frame waits for more bytes; reset() drops it', () => {
  const { framer, frames } = collect('request');
  framer.push(hex(READ_REQUEST).subarray(0, 5));
  assert.equal(framer.buffered, 5);
  assert.equal(frames.length, 0);
  framer.reset();
  assert.equal(framer.buffered, 0);
  framer.push(hex(READ_10_REQUEST));
  assert.deepEqual(frames, [{ unit: 1, pdu: '030000000A' }]);
});

test('exception replies are framed as 5-byte ADUs', () => {
  const { framer, frames } = collect('response');
  const adu = encodeRtu(0x0a, hex('8102'));
  assert.equal(adu.length, 5);
  framer.push(Buffer.concat([adu, hex(READ_REPLY)]));
  assert.deepEqual(frames, [
    { unit: 0x0a, pdu: '8102' },
    { unit: 0x11, pdu: '0306AE4156524340' },
  ]);
});

test('delivered PDUs are copies that later input does not overwrite', () => {
  const pdus: Buffer[] = [];
  const framer = new RtuFramer('request', (_unit, pdu) => pdus.push(pdu));
  for (let i = 0; i < 300; i++) framer.push(encodeRtu(1, Buffer.from([6, 0, i & 0xff, 0, 1])));
  assert.equal(pdus.length, 300);
  assert.deepEqual(pdus[0], hex('0600000001'));
  assert.deepEqual(pdus[299], Buffer.from([6, 0, 299 & 0xff, 0, 1]));
});

test('a long stream in small chunks keeps the buffer bounded', () => {
  const { framer, frames } = collect('response');
  const stream = Buffer.concat(Array.from({ length: 2000 }, () => hex(READ_REPLY)));
  for (let i = 0; i < stream.length; i += 7) {
    framer.push(stream.subarray(i, i + 7));
    assert.ok(framer.buffered < hex(READ_REPLY).length + 7);
  }
  assert.equal(frames.length, 2000);
  assert.equal(framer.stats.frames, 2000);
});

test('onFrame may reset or push from inside the callback', () => {
  const seen: number[] = [];
  const framer: RtuFramer = new RtuFramer('request', (unit) => {
    seen.push(unit);
    if (unit === 1) framer.push(encodeRtu(3, hex('0300000001')));
    if (unit === 3) framer.reset();
  });
  framer.push(Buffer.concat([encodeRtu(1, hex('0300000001')), encodeRtu(2, hex('0300000001'))]));
  // Frame 3 is appended behind frame 2, and resetting on 3 leaves nothing behind.
  assert.deepEqual(seen, [1, 2, 3]);
  assert.equal(framer.buffered, 0);
});

test('rtuSilenceMs: 3.5 character times, 1.75 ms above 19200 baud', () => {
  assert.equal(rtuSilenceMs(9600), (3.5 * 11 * 1000) / 9600);
  assert.ok(Math.abs(rtuSilenceMs(9600) - 4.0104) < 1e-3);
  assert.ok(Math.abs(rtuSilenceMs(19200) - 2.0052) < 1e-3);
  assert.equal(rtuSilenceMs(19200, 10), 35000 / 19200);
  assert.equal(rtuSilenceMs(38400), 1.75);
  assert.equal(rtuSilenceMs(115200), 1.75);
  assert.throws(() => rtuSilenceMs(0), RangeError);
});
