import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  EXCEPTION,
  FC,
  INVALID_REPLY,
  ModbusPduError,
  decodeRequest,
  decodeResponse,
  encodeRequest,
  encodeResponse,
  exceptionName,
  requestPduLength,
  responsePduLength,
  type ModbusRequest,
  type ModbusResponse,
} from '../../../src/modbus/pdu.js';

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex');
const toHex = (b: Buffer): string => b.toString('hex').toUpperCase();

function pduError(code: number): (error: unknown) => boolean {
  return (error) => error instanceof ModbusPduError && error.exceptionCode === code;
}

// Request/response pairs from the examples of the Modbus application protocol spec.
interface SpecExample {
  name: string;
  request: ModbusRequest;
  requestHex: string;
  response: ModbusResponse;
  responseHex: string;
}

// Read coils 20..38: coil 27..20 = CD, 35..28 = 6B, 38..36 = 101.
const coils20to38 = [
  true, false, true, true, false, false, true, true,
  true, true, false, true, false, true, true, false,
  true, false, true,
];
// Read discrete inputs 197..218: AC DB 35 (22 inputs).
const inputs197to218 = [
  false, false, true, true, false, true, false, true,
  true, true, false, true, true, false, true, true,
  true, false, true, false, true, true,
];

const examples: SpecExample[] = [
  {
    name: 'FC1 read coils',
    request: { fc: 1, address: 19, quantity: 19 },
    requestHex: '0100130013',
    response: { fc: 1, bits: coils20to38 },
    responseHex: '0103CD6B05',
  },
  {
    name: 'FC2 read discrete inputs',
    request: { fc: 2, address: 196, quantity: 22 },
    requestHex: '0200C40016',
    response: { fc: 2, bits: inputs197to218 },
    responseHex: '0203ACDB35',
  },
  {
    name: 'FC3 read holding registers',
    request: { fc: 3, address: 107, quantity: 3 },
    requestHex: '03006B0003',
    response: { fc: 3, registers: [0x022b, 0x0000, 0x0064] },
    responseHex: '0306022B00000064',
  },
  {
    name: 'FC4 read input registers',
    request: { fc: 4, address: 8, quantity: 1 },
    requestHex: '0400080001',
    response: { fc: 4, registers: [10] },
    responseHex: '0402000A',
  },
  {
    name: 'FC5 write single coil',
    request: { fc: 5, address: 172, value: true },
    requestHex: '0500ACFF00',
    response: { fc: 5, address: 172, value: true },
    responseHex: '0500ACFF00',
  },
  {
    name: 'FC6 write single register',
    request: { fc: 6, address: 1, value: 3 },
    requestHex: '0600010003',
    response: { fc: 6, address: 1, value: 3 },
    responseHex: '0600010003',
  },
  {
    name: 'FC15 write multiple coils',
    request: {
      fc: 15,
      address: 19,
      values: [true, false, true, true, false, false, true, true, true, false],
    },
    requestHex: '0F0013000A02CD01',
    response: { fc: 15, address: 19, quantity: 10 },
    responseHex: '0F0013000A',
  },
  {
    name: 'FC16 write multiple registers',
    request: { fc: 16, address: 1, values: [0x000a, 0x0102] },
    requestHex: '100001000204000A0102',
    response: { fc: 16, address: 1, quantity: 2 },
    responseHex: '1000010002',
  },
];

for (const ex of examples) {
  test(`spec example ${ex.name}: encode and decode both directions`, () => {
    assert.equal(toHex(encodeRequest(ex.request)), ex.requestHex);
    assert.deepEqual(decodeRequest(hex(ex.requestHex)), ex.request);
    assert.equal(toHex(encodeResponse(ex.response)), ex.responseHex);
    assert.deepEqual(decodeResponse(hex(ex.responseHex), ex.request), ex.response);
    assert.equal(requestPduLength(hex(ex.requestHex), 0), ex.requestHex.length / 2);
    assert.equal(responsePduLength(hex(ex.responseHex), 0), ex.responseHex.length / 2);
  });
}

test('FC constants have the spec values', () => {
  assert.equal(FC.WRITE_MULTIPLE_COILS, 0x0f);
  assert.equal(FC.WRITE_MULTIPLE_REGISTERS, 0x10);
});

test('FC5 off is encoded as 00 00', () => {
  assert.equal(toHex(encodeRequest({ fc: 5, address: 0xabcd, value: false })), '05ABCD0000');
});

test('bit reply without a request decodes every bit of every byte', () => {
  const res = decodeResponse(hex('0103CD6B05'));
  assert.ok('bits' in res);
  assert.equal(res.bits.length, 24);
  assert.deepEqual(res.bits.slice(0, 19), coils20to38);
  assert.deepEqual(res.bits.slice(19), [false, false, false, false, false]);
});

test('exception responses: spec example 81 02 and names', () => {
  const res = decodeResponse(hex('8102'), { fc: 1, address: 0x04a1, quantity: 1 });
  assert.deepEqual(res, { fc: 1, exception: EXCEPTION.ILLEGAL_DATA_ADDRESS });
  assert.equal(toHex(encodeResponse({ fc: 1, exception: 2 })), '8102');
  assert.equal(toHex(encodeResponse({ fc: 16, exception: EXCEPTION.SLAVE_DEVICE_BUSY })), '9006');
  assert.equal(responsePduLength(hex('83'), 0), 2);
  assert.equal(exceptionName(1), 'IllegalFunction');
  assert.equal(exceptionName(2), 'IllegalAddress');
  assert.equal(exceptionName(3), 'IllegalValue');
  assert.equal(exceptionName(4), 'SlaveFailure');
  assert.equal(exceptionName(EXCEPTION.GATEWAY_TARGET_FAILED), 'GatewayNoResponse');
  assert.equal(exceptionName(99), 'UnknownException(99)');
});

test('exception reply to a different function is a mismatch', () => {
  assert.throws(() => decodeResponse(hex('8302'), { fc: 4, address: 0, quantity: 1 }), pduError(INVALID_REPLY));
});

test('maximum sizes round trip', () => {
  const bits = Array.from({ length: 2000 }, (_, i) => i % 3 === 0);
  const readBits = { fc: 2, address: 0, quantity: 2000 } as const;
  assert.deepEqual(decodeResponse(encodeResponse({ fc: 2, bits }), readBits), { fc: 2, bits });
  const registers = Array.from({ length: 125 }, (_, i) => (i * 523) & 0xffff);
  assert.deepEqual(decodeResponse(encodeResponse({ fc: 4, registers })), { fc: 4, registers });
  const coils: ModbusRequest = { fc: 15, address: 65536 - 1968, values: bits.slice(0, 1968) };
  assert.deepEqual(decodeRequest(encodeRequest(coils)), coils);
  const regs: ModbusRequest = { fc: 16, address: 65535 - 122, values: registers.slice(0, 123) };
  const pdu = encodeRequest(regs);
  assert.equal(pdu.length, 6 + 246);
  assert.deepEqual(decodeRequest(pdu), regs);
  assert.equal(requestPduLength(pdu, 0), pdu.length);
});

test('encodeRequest range errors', () => {
  const bad: ModbusRequest[] = [
    { fc: 3, address: -1, quantity: 1 },
    { fc: 3, address: 65536, quantity: 1 },
    { fc: 3, address: 1.5, quantity: 1 },
    { fc: 3, address: 0, quantity: 0 },
    { fc: 3, address: 0, quantity: 126 },
    { fc: 1, address: 0, quantity: 2001 },
    { fc: 4, address: 65535, quantity: 2 },
    { fc: 6, address: 0, value: 65536 },
    { fc: 6, address: 0, value: -1 },
    { fc: 15, address: 0, values: [] },
    { fc: 15, address: 0, values: new Array<boolean>(1969).fill(true) },
    { fc: 16, address: 0, values: new Array<number>(124).fill(0) },
    { fc: 16, address: 0, values: [1, 70000] },
  ];
  for (const req of bad) assert.throws(() => encodeRequest(req), RangeError, JSON.stringify(req).slice(0, 60));
  assert.throws(() => encodeRequest({ fc: 3, address: 0, quantity: 126 }), /quantity must be 1\.\.125, got 126/);
  assert.doesNotThrow(() => encodeRequest({ fc: 3, address: 65535, quantity: 1 }));
  assert.doesNotThrow(() => encodeRequest({ fc: 1, address: 0, quantity: 2000 }));
});

test('encodeResponse range errors', () => {
  assert.throws(() => encodeResponse({ fc: 3, registers: [] }), RangeError);
  assert.throws(() => encodeResponse({ fc: 3, registers: [65536] }), RangeError);
  assert.throws(() => encodeResponse({ fc: 0x80, exception: 1 }), RangeError);
});

test('decodeRequest: unknown function is ILLEGAL_FUNCTION', () => {
  assert.throws(() => decodeRequest(hex('07')), pduError(EXCEPTION.ILLEGAL_FUNCTION));
  assert.throws(() => decodeRequest(hex('2B0E0100')), pduError(EXCEPTION.ILLEGAL_FUNCTION));
  assert.throws(() => decodeRequest(Buffer.alloc(0)), pduError(EXCEPTION.ILLEGAL_FUNCTION));
});

test('decodeRequest: bad quantity, byte count or length is ILLEGAL_DATA_VALUE', () => {
  const cases = [
    '0300000000', // quantity 0
    '030000007E', // 126 registers
    '01000007D1', // 2001 bits
    '03000000', // truncated
    '030000000100', // trailing byte
    '0500001234', // coil value not FF00/0000
    '0F000000080200', // byte count 2 for 8 coils
    '0F0000000801', // missing data byte
    '10000000010400010002', // byte count 4 for 1 register
    '10000000020400', // data shorter than byte count
    '10000000000000', // quantity 0
  ];
  for (const c of cases) assert.throws(() => decodeRequest(hex(c)), pduError(EXCEPTION.ILLEGAL_DATA_VALUE), c);
});

test('decodeRequest: block past the end of the address space is ILLEGAL_DATA_ADDRESS', () => {
  assert.throws(() => decodeRequest(hex('03FFFF0002')), pduError(EXCEPTION.ILLEGAL_DATA_ADDRESS));
  assert.deepEqual(decodeRequest(hex('03FFFF0001')), { fc: 3, address: 65535, quantity: 1 });
});

test('decodeResponse: malformed replies throw INVALID_REPLY', () => {
  const cases = ['', '03', '0304000A', '0303000A00', '0300', '0100', '05000AFF', '05000A1234', '81', '810203', '07', '0600010003FF'];
  for (const c of cases) assert.throws(() => decodeResponse(hex(c)), pduError(INVALID_REPLY), c || 'empty');
});

test('decodeResponse: replies that do not match the request', () => {
  const mismatches: Array<[string, ModbusRequest]> = [
    ['0402000A', { fc: 3, address: 8, quantity: 1 }], // other function
    ['0304000A000B', { fc: 3, address: 8, quantity: 1 }], // too many registers
    ['0302000A', { fc: 3, address: 8, quantity: 2 }], // too few registers
    ['010205FF', { fc: 1, address: 0, quantity: 8 }], // byte count for 16 bits
    ['0500ADFF00', { fc: 5, address: 172, value: true }], // address echo
    ['0500AC0000', { fc: 5, address: 172, value: true }], // value echo
    ['0600010004', { fc: 6, address: 1, value: 3 }], // value echo
    ['0600020003', { fc: 6, address: 1, value: 3 }], // address echo
    ['0F0013000B', { fc: 15, address: 19, values: new Array<boolean>(10).fill(false) }], // quantity echo
    ['1000020002', { fc: 16, address: 1, values: [1, 2] }], // address echo
  ];
  for (const [reply, req] of mismatches) {
    assert.throws(() => decodeResponse(hex(reply), req), pduError(INVALID_REPLY), reply);
  }
});

test('bit replies are cut to the requested quantity', () => {
  const res = decodeResponse(hex('0101FF'), { fc: 1, address: 0, quantity: 3 });
  assert.deepEqual(res, { fc: 1, bits: [true, true, true] });
});

test('PDU length helpers need the byte count before answering', () => {
  assert.equal(requestPduLength(hex(''), 0), undefined);
  assert.equal(requestPduLength(hex('03'), 0), 5);
  assert.equal(requestPduLength(hex('1000010002'), 0), undefined);
  assert.equal(requestPduLength(hex('100001000204'), 0), 10);
  assert.equal(requestPduLength(hex('AA0F00000008'), 1), undefined);
  assert.equal(requestPduLength(hex('AA0F0000000801'), 1), 7);
  assert.equal(requestPduLength(hex('07'), 0), -1);
  assert.equal(requestPduLength(hex('83'), 0), -1);
  assert.equal(responsePduLength(hex('03'), 0), undefined);
  assert.equal(responsePduLength(hex('0306'), 0), 8);
  assert.equal(responsePduLength(hex('10'), 0), 5);
  assert.equal(responsePduLength(hex('90'), 0), 2);
  assert.equal(responsePduLength(hex('87'), 0), -1);
  assert.equal(responsePduLength(hex('2B'), 0), -1);
});
