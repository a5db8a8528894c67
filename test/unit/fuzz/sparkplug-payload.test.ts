import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import sparkplug from 'sparkplug-payload';
import { DEFAULT_DECODE_LIMITS, decodePayload } from '../../../src/api/sparkplug/payload-decode.js';

// Property-based fuzzing of the Sparkplug payload decoder, which reads what
// any client of the broker publishes as a command. Whatever the bytes, the
// answer is a payload or an error, never an exception, and never more
// metrics or longer strings than the caps.

const SETTINGS = { numRuns: 3000, seed: 0x5b1e, endOnFailure: true };
const tahu = sparkplug.get('spBv1.0')!;

function checked(bytes: Uint8Array): void {
  const result = decodePayload(bytes);
  if (result.ok) {
    assert.ok(result.payload.metrics.length <= DEFAULT_DECODE_LIMITS.maxMetrics);
    for (const metric of result.payload.metrics) {
      if (typeof metric.name === 'string') assert.ok(Buffer.byteLength(metric.name) <= DEFAULT_DECODE_LIMITS.maxStringBytes);
    }
  } else {
    assert.equal(typeof result.error, 'string');
    assert.ok(result.error.length > 0);
  }
}

/** Valid commands encoded by Tahu, so mutations start from realistic bytes. */
const validCommand = fc
  .array(
    fc.oneof(
      fc.record({ name: fc.string({ maxLength: 20 }), type: fc.constant('Boolean' as const), value: fc.boolean() }),
      fc.record({ alias: fc.nat({ max: 5000 }), type: fc.constant('Double' as const), value: fc.double({ noNaN: true }) }),
      fc.record({ name: fc.string({ maxLength: 8 }), type: fc.constant('Int32' as const), value: fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }) }),
      fc.record({ name: fc.string({ maxLength: 8 }), type: fc.constant('String' as const), value: fc.string({ maxLength: 30 }) }),
    ),
    { maxLength: 6 },
  )
  .map((metrics) => Buffer.from(tahu.encodePayload({ timestamp: 1, metrics })));

/** A valid command with bytes flipped, cut, or spliced with random data. */
const mutated = fc
  .tuple(validCommand, fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 4 }), fc.nat(), fc.uint8Array({ maxLength: 16 }))
  .map(([bytes, flips, cut, tail]) => {
    const copy = Buffer.from(bytes);
    for (const [at, value] of flips) if (copy.length > 0) copy[at % copy.length] = value;
    return Buffer.concat([copy.subarray(0, copy.length === 0 ? 0 : cut % (copy.length + 1)), tail]);
  });

/** Tags with every wire type and lengths near the edges, as a hostile client would craft. */
const crafted = fc
  .array(
    fc.tuple(
      fc.integer({ min: 0, max: 20 }),
      fc.integer({ min: 0, max: 7 }),
      fc.oneof(fc.nat({ max: 40 }), fc.constantFrom(0x7fff_ffff, 2 ** 35, DEFAULT_DECODE_LIMITS.maxBytes + 1)),
    ),
    { maxLength: 12 },
  )
  .map((parts) => {
    const out: number[] = [];
    const varint = (value: number) => {
      while (value >= 0x80) {
        out.push((value % 0x80) | 0x80);
        value = Math.floor(value / 0x80);
      }
      out.push(value);
    };
    for (const [field, wire, length] of parts) {
      varint(field * 8 + wire);
      varint(length);
    }
    return Uint8Array.from(out);
  });

test('random bytes never make the decoder throw', () => {
  fc.assert(fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => checked(bytes)), SETTINGS);
});

test('mutated Tahu commands never make the decoder throw', () => {
  fc.assert(fc.property(mutated, (bytes) => checked(bytes)), SETTINGS);
});

test('crafted tags and lengths never make the decoder throw', () => {
  fc.assert(fc.property(crafted, (bytes) => checked(bytes)), SETTINGS);
});

test('deep nesting and many metrics are refused, not followed', () => {
  // A metric holding a property set holding a property set … 
  let nested = Buffer.alloc(0);
  for (let depth = 0; depth < 200; depth++) nested = Buffer.concat([Buffer.from([0x4a, nested.length & 0x7f]), nested.subarray(0, 120)]);
  const deep = Buffer.concat([Buffer.from([0x12, nested.length > 127 ? 127 : nested.length]), nested.subarray(0, 127)]);
  const deepResult = decodePayload(deep);
  assert.equal(deepResult.ok, false);
  const oneMetric = Buffer.from([0x12, 0x02, 0x10, 0x01]);
  const many = Buffer.concat(Array.from({ length: DEFAULT_DECODE_LIMITS.maxMetrics + 1 }, () => oneMetric));
  const manyResult = decodePayload(many);
  assert.equal(manyResult.ok, false);
  assert.match(manyResult.ok ? '' : manyResult.error, /more than/);
});
