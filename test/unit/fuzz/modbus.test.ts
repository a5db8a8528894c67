import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { ModbusPduError, decodeRequest, decodeResponse, encodeRequest, type ModbusRequest } from '../../../src/modbus/pdu.js';
import { RtuFramer, encodeRtu } from '../../../src/modbus/rtu-framer.js';
import { serveRequest, type SlaveStore } from '../../../src/modbus/slave.js';
import { MbapFramer } from '../../../src/modbus/tcp-framer.js';

// Property-based fuzzing of everything that parses bytes from a bus or a
// Modbus client: framers, PDU decoders and the slave engine. Fixed seeds keep
// CI deterministic; RUNS inputs per property (2,000 here).

const RUNS = 2000;
const SETTINGS = { numRuns: RUNS, seed: 0x10ca7e, endOnFailure: true };

const bytes = (maxLength: number) => fc.uint8Array({ maxLength }).map((array) => Buffer.from(array));

/** A byte stream and the places it is cut into chunks, as a serial or TCP read would. */
const chunkedStream = (maxLength: number) =>
  fc.tuple(bytes(maxLength), fc.array(fc.nat(), { maxLength: 12 })).map(([stream, cuts]) => {
    const points = [...new Set(cuts.map((cut) => cut % (stream.length + 1)))].sort((a, b) => a - b);
    const chunks: Buffer[] = [];
    let from = 0;
    for (const point of [...points, stream.length]) {
      chunks.push(stream.subarray(from, point));
      from = point;
    }
    return { stream, chunks };
  });

const address = fc.integer({ min: 0, max: 0xffff });
const validRequest: fc.Arbitrary<ModbusRequest> = fc.oneof(
  fc.record({ fc: fc.constantFrom(1 as const, 2 as const), address: fc.integer({ min: 0, max: 0xffff - 2000 }), quantity: fc.integer({ min: 1, max: 2000 }) }),
  fc.record({ fc: fc.constantFrom(3 as const, 4 as const), address: fc.integer({ min: 0, max: 0xffff - 125 }), quantity: fc.integer({ min: 1, max: 125 }) }),
  fc.record({ fc: fc.constant(5 as const), address, value: fc.boolean() }),
  fc.record({ fc: fc.constant(6 as const), address, value: fc.integer({ min: 0, max: 0xffff }) }),
  fc.record({ fc: fc.constant(15 as const), address: fc.integer({ min: 0, max: 0xffff - 1968 }), values: fc.array(fc.boolean(), { minLength: 1, maxLength: 1968 }) }),
  fc.record({ fc: fc.constant(16 as const), address: fc.integer({ min: 0, max: 0xffff - 123 }), values: fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 1, maxLength: 123 }) }),
);

function assertClearDecodeError(error: unknown): void {
  assert.ok(error instanceof ModbusPduError, `expected a ModbusPduError, got ${String(error)}`);
  assert.ok(error.message.length > 0);
}

test(`RTU framer: random bytes in random chunks never throw; every frame it delivers is CRC-valid (${RUNS} inputs per kind)`, () => {
  for (const kind of ['request', 'response'] as const) {
    fc.assert(
      fc.property(chunkedStream(600), ({ stream, chunks }) => {
        const frames: Buffer[] = [];
        const framer = new RtuFramer(kind, (unit, pdu) => frames.push(encodeRtu(unit, pdu)));
        for (const chunk of chunks) framer.push(chunk);
        // Re-encoding adds a fresh CRC: finding the result in the input proves the received CRC matched.
        for (const frame of frames) assert.ok(stream.includes(frame));
        assert.ok(framer.buffered <= stream.length);
      }),
      SETTINGS,
    );
  }
});

test(`RTU framer: back-to-back valid requests, cut anywhere, come out exactly (${RUNS} inputs)`, () => {
  fc.assert(
    fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 247 }), validRequest), { minLength: 1, maxLength: 4 }), fc.array(fc.nat(), { maxLength: 8 }), (requests, cuts) => {
      const adus = requests.map(([unit, request]) => encodeRtu(unit, encodeRequest(request)));
      const stream = Buffer.concat(adus);
      const points = [...new Set(cuts.map((cut) => cut % (stream.length + 1)))].sort((a, b) => a - b);
      const seen: Buffer[] = [];
      const framer = new RtuFramer('request', (unit, pdu) => seen.push(encodeRtu(unit, pdu)));
      let from = 0;
      for (const point of [...points, stream.length]) {
        framer.push(stream.subarray(from, point));
        from = point;
      }
      assert.deepEqual(seen, adus);
    }),
    SETTINGS,
  );
});

test(`MBAP framer: random bytes in random chunks never throw; frames or a stated reason (${RUNS} inputs)`, () => {
  fc.assert(
    fc.property(chunkedStream(600), ({ chunks }) => {
      const reasons: string[] = [];
      const framer = new MbapFramer(
        (transactionId, unit, pdu) => {
          assert.ok(transactionId >= 0 && transactionId <= 0xffff && unit >= 0 && unit <= 0xff);
          assert.ok(pdu.length >= 1 && pdu.length <= 253);
        },
        (reason) => reasons.push(reason),
      );
      for (const chunk of chunks) framer.push(chunk);
      for (const reason of reasons) assert.match(reason, /protocol id|MBAP length/);
    }),
    SETTINGS,
  );
});

test(`PDU decoders: random PDUs decode or fail with a ModbusPduError (${RUNS} inputs each)`, () => {
  fc.assert(
    fc.property(bytes(260), (pdu) => {
      try {
        decodeRequest(pdu);
      } catch (error) {
        assertClearDecodeError(error);
      }
    }),
    SETTINGS,
  );
  fc.assert(
    fc.property(bytes(260), fc.option(validRequest, { nil: undefined }), (pdu, request) => {
      try {
        decodeResponse(pdu, request);
      } catch (error) {
        assertClearDecodeError(error);
      }
    }),
    SETTINGS,
  );
});

test(`PDU codec: valid requests survive encode then decode (${RUNS} inputs)`, () => {
  fc.assert(
    fc.property(validRequest, (request) => assert.deepEqual(decodeRequest(encodeRequest(request)), { ...request })),
    SETTINGS,
  );
});

/** 1000 of everything; a store that also misbehaves (throws, short answers) for the slave's own error path. */
class FuzzStore implements SlaveStore {
  constructor(private readonly misbehave: boolean) {}
  readRegisters(_space: 'holding' | 'input', address: number, quantity: number): number[] | undefined {
    if (this.misbehave) throw new Error('store broke');
    return address + quantity <= 1000 ? new Array<number>(quantity).fill(0xabcd) : undefined;
  }
  readBits(_space: 'coil' | 'discrete', address: number, quantity: number): boolean[] | undefined {
    if (this.misbehave) return [true];
    return address + quantity <= 1000 ? new Array<boolean>(quantity).fill(true) : undefined;
  }
  writeRegisters(address: number, values: number[]): boolean {
    return address + values.length <= 1000;
  }
  writeCoils(address: number, values: boolean[]): boolean {
    return address + values.length <= 1000;
  }
}

test(`slave engine: any PDU gets a well-formed answer, never a throw (${RUNS} inputs)`, () => {
  fc.assert(
    fc.property(fc.oneof(bytes(260), validRequest.map(encodeRequest)), fc.boolean(), (pdu, misbehave) => {
      const reply = serveRequest(new FuzzStore(misbehave), pdu);
      const fcode = pdu.length > 0 ? pdu[0]! & 0x7f : 0;
      assert.ok(reply.length >= 2 && reply.length <= 253);
      assert.ok(reply[0] === fcode || reply[0] === (fcode | 0x80));
      // A client must be able to read whatever the slave said.
      decodeResponse(reply);
    }),
    SETTINGS,
  );
});
