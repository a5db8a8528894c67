import { test } from 'node:test';
import assert from 'node:assert/strict';
import { crc16 } from '../../../src/modbus/crc.js';

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex');

// Wire order is low byte first, so the wire bytes "C5 CD" are the value 0xCDC5.
function wireCrc(s: string): string {
  const crc = crc16(hex(s));
  return Buffer.from([crc & 0xff, crc >>> 8]).toString('hex').toUpperCase();
}

test('CRC-16/MODBUS check value of "123456789" is 0x4B37', () => {
  assert.equal(crc16(Buffer.from('123456789', 'ascii')), 0x4b37);
});

test('read-holding request 01 03 00 00 00 0A carries CRC C5 CD', () => {
  assert.equal(wireCrc('01 03 00 00 00 0A'), 'C5CD');
  assert.equal(crc16(hex('01 03 00 00 00 0A')), 0xcdc5);
});

test('serial line spec example 11 03 00 6B 00 03 carries CRC 76 87', () => {
  assert.equal(wireCrc('11 03 00 6B 00 03'), '7687');
});

test('other widely published RTU frames', () => {
  assert.equal(wireCrc('01 03 00 00 00 01'), '840A');
  assert.equal(wireCrc('01 04 00 00 00 01'), '31CA');
  assert.equal(wireCrc('01 06 00 01 00 03'), '980B');
  assert.equal(wireCrc('11 03 06 AE 41 56 52 43 40'), '49AD');
});

test('a frame followed by its own CRC (low byte first) has CRC 0', () => {
  assert.equal(crc16(hex('01 03 00 00 00 0A C5 CD')), 0);
});

test('start/end select a sub-range', () => {
  const buf = hex('FF FF 11 03 00 6B 00 03 EE');
  assert.equal(crc16(buf, 2, 8), 0x8776);
  assert.equal(crc16(buf, 3, 3), 0xffff, 'empty range leaves the initial value');
});

test('a single flipped bit changes the CRC', () => {
  const buf = hex('11 03 00 6B 00 03');
  buf[3]! ^= 0x01;
  assert.notEqual(crc16(buf), 0x8776);
});
