import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MbapFramer, TransactionIds, encodeMbap } from '../../../src/modbus/tcp-framer.js';

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex');

// The spec's read-holding-registers example (FC3, registers 108..110) wrapped
// in MBAP: transaction 1, protocol 0, length = unit + PDU, unit 0x11.
const REQUEST_ADU = '0001 0000 0006 11 03 006B 0003';
const REPLY_ADU = '0001 0000 0009 11 03 06 022B 0000 0064';

interface Frame {
  transactionId: number;
  unit: number;
  pdu: string;
}

function collect(): { framer: MbapFramer; frames: Frame[]; errors: string[] } {
  const frames: Frame[] = [];
  const errors: string[] = [];
  const framer = new MbapFramer(
    (transactionId, unit, pdu) => frames.push({ transactionId, unit, pdu: pdu.toString('hex').toUpperCase() }),
    (reason) => errors.push(reason),
  );
  return { framer, frames, errors };
}

test('encodeMbap builds the header with length = unit + PDU', () => {
  assert.deepEqual(encodeMbap(1, 0x11, hex('03006B0003')), hex(REQUEST_ADU));
  assert.deepEqual(encodeMbap(1, 0x11, hex('0306022B00000064')), hex(REPLY_ADU));
  assert.deepEqual(encodeMbap(0xabcd, 0xff, hex('8102')), hex('ABCD 0000 0003 FF 81 02'));
});

test('encodeMbap range errors', () => {
  assert.throws(() => encodeMbap(65536, 1, hex('03')), RangeError);
  assert.throws(() => encodeMbap(-1, 1, hex('03')), RangeError);
  assert.throws(() => encodeMbap(1, 256, hex('03')), RangeError);
  assert.throws(() => encodeMbap(1, 1, Buffer.alloc(0)), RangeError);
  assert.throws(() => encodeMbap(1, 1, Buffer.alloc(254)), RangeError);
});

test('one frame in one chunk', () => {
  const { framer, frames, errors } = collect();
  framer.push(hex(REPLY_ADU));
  assert.deepEqual(frames, [{ transactionId: 1, unit: 0x11, pdu: '0306022B00000064' }]);
  assert.deepEqual(errors, []);
  assert.equal(framer.buffered, 0);
});

test('frame fed byte by byte is delivered on its last byte', () => {
  const { framer, frames } = collect();
  const adu = hex(REQUEST_ADU);
  for (let i = 0; i < adu.length; i++) {
    framer.push(adu.subarray(i, i + 1));
    assert.equal(frames.length, i === adu.length - 1 ? 1 : 0, `after byte ${i}`);
  }
  assert.deepEqual(frames, [{ transactionId: 1, unit: 0x11, pdu: '03006B0003' }]);
});

test('concatenated frames split at every position', () => {
  const stream = Buffer.concat([
    encodeMbap(1, 1, hex('0300000002')),
    encodeMbap(2, 2, hex('8302')),
    encodeMbap(65535, 3, hex('100001000204000A0102')),
  ]);
  const expected = [
    { transactionId: 1, unit: 1, pdu: '0300000002' },
    { transactionId: 2, unit: 2, pdu: '8302' },
    { transactionId: 65535, unit: 3, pdu: '100001000204000A0102' },
  ];
  for (let cut = 0; cut <= stream.length; cut++) {
    const { framer, frames, errors } = collect();
    framer.push(stream.subarray(0, cut));
    framer.push(stream.subarray(cut));
    assert.deepEqual(frames, expected, `cut at ${cut}`);
    assert.deepEqual(errors, []);
  }
});

test('non-zero protocol id is a protocol error that drops the buffer', () => {
  const { framer, frames, errors } = collect();
  framer.push(Buffer.concat([hex('0001 0001 0006 11 03 006B 0003'), hex(REPLY_ADU)]));
  assert.deepEqual(frames, []);
  assert.equal(errors.length, 1);
  assert.match(errors[0]!, /protocol id 1/);
  assert.equal(framer.buffered, 0);
  framer.push(hex(REPLY_ADU));
  assert.equal(frames.length, 1, 'a fresh frame after the error is accepted');
});

test('length below 2 or above 254 is a protocol error', () => {
  for (const length of ['0000', '0001', '00FF', 'FFFF']) {
    const { framer, frames, errors } = collect();
    framer.push(hex(`0001 0000 ${length} 11`));
    assert.equal(errors.length, 1, length);
    assert.match(errors[0]!, /length/);
    assert.equal(frames.length, 0);
    assert.equal(framer.buffered, 0);
  }
  const ok = collect();
  ok.framer.push(encodeMbap(7, 1, Buffer.alloc(253, 0x03)));
  assert.equal(ok.frames.length, 1);
  assert.deepEqual(ok.errors, []);
});

test('a bad header after a good frame keeps the good frame', () => {
  const { framer, frames, errors } = collect();
  framer.push(Buffer.concat([hex(REPLY_ADU), hex('0002 1234 0006 11 03 006B 0003')]));
  assert.equal(frames.length, 1);
  assert.equal(errors.length, 1);
});

test('reset() drops a partial frame', () => {
  const { framer, frames } = collect();
  framer.push(hex(REPLY_ADU).subarray(0, 10));
  assert.equal(framer.buffered, 10);
  framer.reset();
  framer.push(hex(REQUEST_ADU));
  assert.deepEqual(frames, [{ transactionId: 1, unit: 0x11, pdu: '03006B0003' }]);
});

test('TransactionIds counts 1..65535 and wraps to 1, never 0', () => {
  const ids = new TransactionIds();
  assert.equal(ids.next(), 1);
  assert.equal(ids.next(), 2);
  const seen = new Set<number>([1, 2]);
  for (let i = 3; i <= 65535; i++) {
    const id = ids.next();
    assert.ok(id !== 0);
    seen.add(id);
  }
  assert.equal(seen.size, 65535, 'every id used once per cycle');
  assert.equal(ids.next(), 1);
  const late = new TransactionIds(65534);
  assert.deepEqual([late.next(), late.next(), late.next()], [65534, 65535, 1]);
  assert.throws(() => new TransactionIds(0), RangeError);
});
