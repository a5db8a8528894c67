import assert from 'node:assert/strict';
import { test } from 'node:test';
import sparkplug from 'sparkplug-payload';
import { decodePayload } from '../../../src/api/sparkplug/payload-decode.js';
import { encodePayload } from '../../../src/api/sparkplug/payload-encode.js';
import { DataType } from '../../../src/api/sparkplug/payload-types.js';

// Our hand-rolled codec against Eclipse Tahu's (protobufjs): what we encode,
// Tahu reads as meant; what Tahu encodes (a host's commands), we read.

const tahu = sparkplug.get('spBv1.0')!;

const num = (value: unknown) => (typeof value === 'object' && value !== null && 'toNumber' in value ? (value as { toNumber(): number }).toNumber() : value);

test('Tahu decodes every datatype we encode', () => {
  const bytes = encodePayload({
    timestamp: 1_764_000_000_123,
    seq: 255,
    metrics: [
      { name: 'bdSeq', datatype: DataType.Int64, value: 7 },
      { name: 'di/1_01/value', alias: 3, datatype: DataType.Boolean, value: true, timestamp: 1_764_000_000_100 },
      { name: 'di/1_01/counter', alias: 4, datatype: DataType.UInt64, value: 2 ** 40 },
      { name: 'ai/1_01/value', alias: 5, datatype: DataType.Double, value: 3.25, properties: { engUnit: 'V', engLow: '0' } },
      { name: 'f', datatype: DataType.Float, value: 1.5 },
      { name: 'i8', datatype: DataType.Int8, value: -3 },
      { name: 'i32', datatype: DataType.Int32, value: -70000 },
      { name: 'u16', datatype: DataType.UInt16, value: 65535 },
      { name: 'i64', datatype: DataType.Int64, value: -5 },
      { name: 's', datatype: DataType.String, value: 'Ünïcode' },
      { name: 'stale', alias: 9, datatype: DataType.Double, value: null },
      { alias: 10, datatype: DataType.Boolean, value: false, isHistorical: true },
    ],
  });
  const decoded = tahu.decodePayload(bytes);
  assert.equal(num(decoded.timestamp), 1_764_000_000_123);
  assert.equal(num(decoded.seq), 255);
  const metrics = decoded.metrics!;
  const byName = (name: string) => metrics.find((metric) => metric.name === name)!;
  assert.equal(num(byName('bdSeq').value), 7);
  assert.equal(byName('bdSeq').type, 'Int64');
  assert.equal(byName('di/1_01/value').value, true);
  assert.equal(num(byName('di/1_01/value').alias), 3);
  assert.equal(num(byName('di/1_01/value').timestamp), 1_764_000_000_100);
  assert.equal(num(byName('di/1_01/counter').value), 2 ** 40);
  assert.equal(byName('di/1_01/counter').type, 'UInt64');
  assert.equal(byName('ai/1_01/value').value, 3.25);
  assert.deepEqual(byName('ai/1_01/value').properties, { engUnit: { type: 'String', value: 'V' }, engLow: { type: 'String', value: '0' } });
  assert.equal(byName('f').value, 1.5);
  assert.equal(byName('i8').value, -3);
  assert.equal(byName('i32').value, -70000);
  assert.equal(byName('u16').value, 65535);
  assert.equal(num(byName('i64').value), -5);
  assert.equal(byName('s').value, 'Ünïcode');
  assert.equal(byName('stale').value, null);
  const historical = metrics.find((metric) => num(metric.alias) === 10)!;
  assert.equal(historical.isHistorical, true);
  assert.equal(historical.value, false);
  assert.equal(historical.name ?? undefined, undefined);
});

test('we decode the commands Tahu encodes', () => {
  const bytes = tahu.encodePayload({
    timestamp: 1_764_000_000_000,
    metrics: [
      { name: 'Node Control/Rebirth', type: 'Boolean', value: true },
      { alias: 12, type: 'Boolean', value: false },
      { name: 'ao/1_01/value', type: 'Float', value: 2.5 },
      { name: 'x', type: 'Int16', value: -2 },
      { name: 'y', type: 'UInt64', value: 123456789012 },
      { name: 'z', type: 'String', value: 'text' },
    ],
  });
  const result = decodePayload(bytes);
  assert.ok(result.ok, result.ok ? '' : result.error);
  const { metrics, timestamp } = result.payload;
  assert.equal(timestamp, 1_764_000_000_000);
  assert.deepEqual(
    metrics.map((metric) => [metric.name, metric.alias, metric.datatype, metric.value]),
    [
      ['Node Control/Rebirth', undefined, DataType.Boolean, true],
      [undefined, 12, DataType.Boolean, false],
      ['ao/1_01/value', undefined, DataType.Float, 2.5],
      ['x', undefined, DataType.Int16, -2],
      ['y', undefined, DataType.UInt64, 123456789012],
      ['z', undefined, DataType.String, 'text'],
    ],
  );
});

test('hostile shapes are refused with a reason', () => {
  const cases: Array<[string, number[], RegExp]> = [
    ['truncated varint', [0x08, 0xff, 0xff], /truncated varint/],
    ['over-long varint', [0x08, ...Array(11).fill(0xff)], /overflows|longer/],
    ['wrong wire type for timestamp', [0x09, 0, 0, 0, 0, 0, 0, 0, 0], /wire type/],
    ['huge length', [0x12, 0xff, 0xff, 0xff, 0xff, 0x0f], /claims|exceeds/],
    ['group wire type', [0x0b], /wire type 3/],
    ['nested metadata', [0x12, 0x02, 0x42, 0x00], /metadata/],
    ['datatype mismatch', [0x12, 0x04, 0x20, 0x0b, 0x50, 0x01], /does not match/],
    ['bad utf-8', [0x12, 0x03, 0x0a, 0x01, 0xff], /UTF-8/],
    ['field 0', [0x00, 0x00], /field number 0/],
  ];
  for (const [what, bytes, reason] of cases) {
    const result = decodePayload(Uint8Array.from(bytes));
    assert.equal(result.ok, false, what);
    assert.match(result.ok ? '' : result.error, reason, what);
  }
  const big = decodePayload(new Uint8Array(70 * 1024));
  assert.equal(big.ok, false);
});
