import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { OwserverClient, OwserverError } from '../../../src/owserver/client.js';
import { HEADER_BYTES, MAX_PAYLOAD_BYTES, MessageReader, OwProtocolError, encodeReply, replyText } from '../../../src/owserver/protocol.js';
import { serveOwConnection } from '../../../src/owserver/responder.js';
import { SimulatedOneWire } from '../../../src/sim/onewire.js';
import { duplexPair } from '../../../src/transport/duplex-pair.js';

// Property-based fuzzing of what parses owserver bytes: the message reader
// (replies from a server, requests to the simulated one) and the client as a
// whole. Whatever arrives, the outcome is messages or an OwProtocolError,
// never another exception, never more than one payload held.

const RUNS = 2000;
const SETTINGS = { numRuns: RUNS, seed: 0x0e1e, endOnFailure: true };

const bytes = (maxLength: number) => fc.uint8Array({ maxLength }).map((array) => Buffer.from(array));

/** A header with chosen fields, so lengths near the limits are tried often. */
const header = fc
  .tuple(
    fc.constantFrom(0, 0, 0, 1, -1),
    fc.oneof(fc.integer({ min: -3, max: 64 }), fc.constantFrom(MAX_PAYLOAD_BYTES, MAX_PAYLOAD_BYTES + 1, 0x7fff_ffff, -0x8000_0000)),
    fc.integer({ min: -0x8000_0000, max: 0x7fff_ffff }),
    fc.integer({ min: -1, max: 100 }),
  )
  .map(([version, length, ret, size]) => {
    const buffer = Buffer.alloc(HEADER_BYTES);
    buffer.writeInt32BE(version, 0);
    buffer.writeInt32BE(length, 4);
    buffer.writeInt32BE(ret, 8);
    buffer.writeInt32BE(size, 16);
    return buffer;
  });

/** Streams mixing valid replies, crafted headers and random bytes, cut into random chunks. */
const stream = fc
  .array(fc.oneof(header, bytes(80), bytes(40).map((payload) => encodeReply(payload.length, payload))), { maxLength: 8 })
  .chain((parts) => {
    const whole = Buffer.concat(parts);
    return fc.array(fc.nat({ max: whole.length }), { maxLength: 10 }).map((cuts) => {
      const points = [...new Set(cuts)].sort((a, b) => a - b);
      const chunks: Buffer[] = [];
      let from = 0;
      for (const point of [...points, whole.length]) {
        chunks.push(whole.subarray(from, point));
        from = point;
      }
      return chunks;
    });
  });

test(`message reader: any bytes in any chunks give messages or an OwProtocolError (${RUNS} inputs)`, () => {
  fc.assert(
    fc.property(stream, (chunks) => {
      const reader = new MessageReader();
      try {
        for (const chunk of chunks) {
          for (const message of reader.push(chunk)) {
            assert.equal(message.version, 0);
            assert.ok(message.payloadLength >= -1 && message.payloadLength <= MAX_PAYLOAD_BYTES);
            assert.equal(message.payload.length, Math.max(0, message.payloadLength));
            replyText(message);
          }
        }
      } catch (error) {
        assert.ok(error instanceof OwProtocolError, `unexpected ${String(error)}`);
      }
    }),
    SETTINGS,
  );
});

test(`client: any reply settles as a value or an OwserverError (${RUNS / 4} inputs)`, async () => {
  await fc.assert(
    fc.asyncProperty(stream, async (chunks) => {
      const client = new OwserverClient({
        timeoutMs: 50,
        where: 'fuzz',
        dial: () => {
          const [near, far] = duplexPair();
          far.once('data', () => {
            for (const chunk of chunks) far.write(chunk);
            far.end();
          });
          far.on('error', () => undefined);
          return near;
        },
      });
      for (const call of [() => client.read('/x/temperature'), () => client.readNumber('/x/temperature'), () => client.dir('/')]) {
        try {
          await call();
        } catch (error) {
          assert.ok(error instanceof OwserverError, `unexpected ${String(error)}`);
        }
      }
    }),
    { ...SETTINGS, numRuns: RUNS / 4 },
  );
});

test(`simulated owserver: any request bytes are answered or the connection is closed (${RUNS / 4} inputs)`, async () => {
  const tree = new SimulatedOneWire(['28', '26']);
  await fc.assert(
    fc.asyncProperty(stream, async (chunks) => {
      const [near, far] = duplexPair();
      serveOwConnection(far, tree);
      near.on('error', () => undefined);
      const closed = new Promise<void>((resolve) => {
        near.on('close', () => resolve());
        near.on('end', () => resolve());
        near.resume();
      });
      for (const chunk of chunks) near.write(chunk);
      near.end();
      await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 100))]);
      near.destroy();
    }),
    { ...SETTINGS, numRuns: RUNS / 4 },
  );
});
