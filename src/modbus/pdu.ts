// Modbus PDU codec (function code + data, no addressing or checksum), shared by
// the RTU and TCP transports and by both the master and the slave side.

export const FC = {
  READ_COILS: 1,
  READ_DISCRETE_INPUTS: 2,
  READ_HOLDING_REGISTERS: 3,
  READ_INPUT_REGISTERS: 4,
  WRITE_SINGLE_COIL: 5,
  WRITE_SINGLE_REGISTER: 6,
  WRITE_MULTIPLE_COILS: 15,
  WRITE_MULTIPLE_REGISTERS: 16,
} as const;

export const EXCEPTION = {
  ILLEGAL_FUNCTION: 1,
  ILLEGAL_DATA_ADDRESS: 2,
  ILLEGAL_DATA_VALUE: 3,
  SLAVE_DEVICE_FAILURE: 4,
  ACKNOWLEDGE: 5,
  SLAVE_DEVICE_BUSY: 6,
  GATEWAY_PATH_UNAVAILABLE: 10,
  GATEWAY_TARGET_FAILED: 11,
} as const;

/**
 * `exceptionCode` of a ModbusPduError raised while decoding a *reply*: the
 * slave sent something malformed or unrelated to the request, which is not an
 * exception the slave reported and must not be mistaken for one.
 */
export const INVALID_REPLY = 0;

// Limits from the Modbus application protocol spec; they keep every PDU within
// the 253 bytes that fit in an RTU ADU.
export const MAX_READ_BITS = 2000;
export const MAX_READ_REGISTERS = 125;
export const MAX_WRITE_COILS = 1968;
export const MAX_WRITE_REGISTERS = 123;
export const MAX_PDU_LENGTH = 253;

const EXCEPTION_FLAG = 0x80;
const COIL_ON = 0xff00;
const COIL_OFF = 0x0000;

const EXCEPTION_NAMES: Readonly<Record<number, string>> = {
  [INVALID_REPLY]: 'InvalidReply',
  1: 'IllegalFunction',
  2: 'IllegalAddress',
  3: 'IllegalValue',
  4: 'SlaveFailure',
  5: 'Acknowledge',
  6: 'SlaveBusy',
  7: 'NegativeAcknowledge',
  8: 'MemoryParityError',
  10: 'GatewayPathUnavailable',
  11: 'GatewayNoResponse',
};

export function exceptionName(code: number): string {
  return EXCEPTION_NAMES[code] ?? `UnknownException(${code})`;
}

export type ModbusRequest =
  | { fc: 1 | 2 | 3 | 4; address: number; quantity: number }
  | { fc: 5; address: number; value: boolean }
  | { fc: 6; address: number; value: number }
  | { fc: 15; address: number; values: boolean[] }
  | { fc: 16; address: number; values: number[] };

export type ModbusException = { fc: number; exception: number };

export type ModbusResponse =
  | { fc: 1 | 2; bits: boolean[] }
  | { fc: 3 | 4; registers: number[] }
  | { fc: 5; address: number; value: boolean }
  | { fc: 6; address: number; value: number }
  | { fc: 15 | 16; address: number; quantity: number }
  | ModbusException;

export class ModbusPduError extends Error {
  constructor(
    readonly exceptionCode: number,
    message: string,
  ) {
    super(message);
    this.name = 'ModbusPduError';
  }
}

export function isException(res: ModbusResponse): res is ModbusException {
  return 'exception' in res;
}

// ---------------------------------------------------------------- encoding

function checkU16(what: string, value: number): void {
  if (!Number.isInteger(value) || value < 0 || value > 0xffff) {
    throw new RangeError(`${what} must be an integer 0..65535, got ${value}`);
  }
}

function checkQuantity(what: string, quantity: number, max: number): void {
  if (!Number.isInteger(quantity) || quantity < 1 || quantity > max) {
    throw new RangeError(`${what} must be 1..${max}, got ${quantity}`);
  }
}

function checkSpan(address: number, quantity: number): void {
  if (address + quantity > 0x10000) {
    throw new RangeError(`address ${address} + quantity ${quantity} runs past 65535`);
  }
}

function packBits(bits: readonly boolean[], out: Buffer, offset: number): void {
  for (let i = 0; i < bits.length; i++) {
    if (bits[i]) out[offset + (i >> 3)]! |= 1 << (i & 7);
  }
}

function unpackBits(buf: Buffer, offset: number, count: number): boolean[] {
  const bits = new Array<boolean>(count);
  for (let i = 0; i < count; i++) {
    bits[i] = (buf[offset + (i >> 3)]! & (1 << (i & 7))) !== 0;
  }
  return bits;
}

function writeRegisters(values: readonly number[], out: Buffer, offset: number): void {
  for (let i = 0; i < values.length; i++) out.writeUInt16BE(values[i]!, offset + 2 * i);
}

function readRegisters(buf: Buffer, offset: number, count: number): number[] {
  const registers = new Array<number>(count);
  for (let i = 0; i < count; i++) registers[i] = buf.readUInt16BE(offset + 2 * i);
  return registers;
}

function addressAndWord(fc: number, address: number, word: number): Buffer {
  const pdu = Buffer.allocUnsafe(5);
  pdu[0] = fc;
  pdu.writeUInt16BE(address, 1);
  pdu.writeUInt16BE(word, 3);
  return pdu;
}

function readLimit(fc: 1 | 2 | 3 | 4): number {
  return fc <= 2 ? MAX_READ_BITS : MAX_READ_REGISTERS;
}

export function encodeRequest(req: ModbusRequest): Buffer {
  checkU16('address', req.address);
  switch (req.fc) {
    case 1:
    case 2:
    case 3:
    case 4:
      checkQuantity('quantity', req.quantity, readLimit(req.fc));
      checkSpan(req.address, req.quantity);
      return addressAndWord(req.fc, req.address, req.quantity);
    case 5:
      return addressAndWord(5, req.address, req.value ? COIL_ON : COIL_OFF);
    case 6:
      checkU16('value', req.value);
      return addressAndWord(6, req.address, req.value);
    case 15: {
      const quantity = req.values.length;
      checkQuantity('coil count', quantity, MAX_WRITE_COILS);
      checkSpan(req.address, quantity);
      const byteCount = (quantity + 7) >> 3;
      const pdu = Buffer.alloc(6 + byteCount);
      pdu[0] = 15;
      pdu.writeUInt16BE(req.address, 1);
      pdu.writeUInt16BE(quantity, 3);
      pdu[5] = byteCount;
      packBits(req.values, pdu, 6);
      return pdu;
    }
    case 16: {
      const quantity = req.values.length;
      checkQuantity('register count', quantity, MAX_WRITE_REGISTERS);
      checkSpan(req.address, quantity);
      for (const value of req.values) checkU16('register value', value);
      const pdu = Buffer.allocUnsafe(6 + 2 * quantity);
      pdu[0] = 16;
      pdu.writeUInt16BE(req.address, 1);
      pdu.writeUInt16BE(quantity, 3);
      pdu[5] = 2 * quantity;
      writeRegisters(req.values, pdu, 6);
      return pdu;
    }
    default:
      throw new RangeError(`unsupported function code ${(req as { fc: unknown }).fc}`);
  }
}

export function encodeResponse(res: ModbusResponse): Buffer {
  if (isException(res)) {
    if (!Number.isInteger(res.fc) || res.fc < 1 || res.fc > 0x7f) {
      throw new RangeError(`exception function code must be 1..127, got ${res.fc}`);
    }
    if (!Number.isInteger(res.exception) || res.exception < 1 || res.exception > 0xff) {
      throw new RangeError(`exception code must be 1..255, got ${res.exception}`);
    }
    return Buffer.from([res.fc | EXCEPTION_FLAG, res.exception]);
  }
  switch (res.fc) {
    case 1:
    case 2: {
      checkQuantity('bit count', res.bits.length, MAX_READ_BITS);
      const byteCount = (res.bits.length + 7) >> 3;
      const pdu = Buffer.alloc(2 + byteCount);
      pdu[0] = res.fc;
      pdu[1] = byteCount;
      packBits(res.bits, pdu, 2);
      return pdu;
    }
    case 3:
    case 4: {
      checkQuantity('register count', res.registers.length, MAX_READ_REGISTERS);
      for (const value of res.registers) checkU16('register value', value);
      const pdu = Buffer.allocUnsafe(2 + 2 * res.registers.length);
      pdu[0] = res.fc;
      pdu[1] = 2 * res.registers.length;
      writeRegisters(res.registers, pdu, 2);
      return pdu;
    }
    case 5:
      checkU16('address', res.address);
      return addressAndWord(5, res.address, res.value ? COIL_ON : COIL_OFF);
    case 6:
      checkU16('address', res.address);
      checkU16('value', res.value);
      return addressAndWord(6, res.address, res.value);
    case 15:
    case 16:
      checkU16('address', res.address);
      checkQuantity('quantity', res.quantity, res.fc === 15 ? MAX_WRITE_COILS : MAX_WRITE_REGISTERS);
      return addressAndWord(res.fc, res.address, res.quantity);
    default:
      throw new RangeError(`unsupported function code ${(res as { fc: unknown }).fc}`);
  }
}

// ---------------------------------------------------------------- decoding

function expectLength(pdu: Buffer, length: number, fail: (message: string) => ModbusPduError): void {
  if (pdu.length !== length) {
    throw fail(`function ${pdu[0]} PDU must be ${length} bytes, got ${pdu.length}`);
  }
}

export function decodeRequest(pdu: Buffer): ModbusRequest {
  const invalid = (message: string) => new ModbusPduError(EXCEPTION.ILLEGAL_DATA_VALUE, message);
  if (pdu.length === 0) throw new ModbusPduError(EXCEPTION.ILLEGAL_FUNCTION, 'empty PDU');
  const fc = pdu[0]!;
  switch (fc) {
    case 1:
    case 2:
    case 3:
    case 4: {
      expectLength(pdu, 5, invalid);
      const address = pdu.readUInt16BE(1);
      const quantity = pdu.readUInt16BE(3);
      const max = readLimit(fc);
      if (quantity < 1 || quantity > max) throw invalid(`quantity must be 1..${max}, got ${quantity}`);
      checkRequestSpan(address, quantity);
      return { fc, address, quantity };
    }
    case 5: {
      expectLength(pdu, 5, invalid);
      const word = pdu.readUInt16BE(3);
      if (word !== COIL_ON && word !== COIL_OFF) {
        throw invalid(`coil value must be 0xFF00 or 0x0000, got 0x${word.toString(16)}`);
      }
      return { fc, address: pdu.readUInt16BE(1), value: word === COIL_ON };
    }
    case 6:
      expectLength(pdu, 5, invalid);
      return { fc, address: pdu.readUInt16BE(1), value: pdu.readUInt16BE(3) };
    case 15:
    case 16: {
      if (pdu.length < 6) throw invalid(`function ${fc} PDU truncated at ${pdu.length} bytes`);
      const address = pdu.readUInt16BE(1);
      const quantity = pdu.readUInt16BE(3);
      const byteCount = pdu[5]!;
      const max = fc === 15 ? MAX_WRITE_COILS : MAX_WRITE_REGISTERS;
      if (quantity < 1 || quantity > max) throw invalid(`quantity must be 1..${max}, got ${quantity}`);
      const expectedBytes = fc === 15 ? (quantity + 7) >> 3 : 2 * quantity;
      if (byteCount !== expectedBytes) {
        throw invalid(`byte count ${byteCount} does not match quantity ${quantity}`);
      }
      expectLength(pdu, 6 + byteCount, invalid);
      checkRequestSpan(address, quantity);
      return fc === 15
        ? { fc, address, values: unpackBits(pdu, 6, quantity) }
        : { fc, address, values: readRegisters(pdu, 6, quantity) };
    }
    default:
      throw new ModbusPduError(EXCEPTION.ILLEGAL_FUNCTION, `unsupported function code ${fc}`);
  }
}

// The spec classes a block that runs past the end of the address space as a
// bad address (exception 2), not a bad value.
function checkRequestSpan(address: number, quantity: number): void {
  if (address + quantity > 0x10000) {
    throw new ModbusPduError(
      EXCEPTION.ILLEGAL_DATA_ADDRESS,
      `address ${address} + quantity ${quantity} runs past 65535`,
    );
  }
}

function replyError(message: string): ModbusPduError {
  return new ModbusPduError(INVALID_REPLY, message);
}

function expectedQuantity(req: ModbusRequest): number {
  if ('quantity' in req) return req.quantity;
  if ('values' in req) return req.values.length;
  return 1;
}

function checkEcho(what: string, got: number, expected: number): void {
  if (got !== expected) throw replyError(`reply ${what} ${got} does not match request ${expected}`);
}

export function decodeResponse(pdu: Buffer, req?: ModbusRequest): ModbusResponse {
  if (pdu.length === 0) throw replyError('empty reply PDU');
  const rawFc = pdu[0]!;
  const fc = rawFc & ~EXCEPTION_FLAG;
  if (req && fc !== req.fc) throw replyError(`reply function ${fc} does not match request ${req.fc}`);

  if (rawFc & EXCEPTION_FLAG) {
    expectLength(pdu, 2, replyError);
    return { fc, exception: pdu[1]! };
  }

  switch (fc) {
    case 1:
    case 2: {
      if (pdu.length < 2) throw replyError('bit reply truncated');
      const byteCount = pdu[1]!;
      expectLength(pdu, 2 + byteCount, replyError);
      if (byteCount === 0) throw replyError('bit reply has no data');
      let count = byteCount * 8;
      if (req) {
        const quantity = expectedQuantity(req);
        checkEcho('byte count', byteCount, (quantity + 7) >> 3);
        count = quantity;
      }
      return { fc, bits: unpackBits(pdu, 2, count) };
    }
    case 3:
    case 4: {
      if (pdu.length < 2) throw replyError('register reply truncated');
      const byteCount = pdu[1]!;
      expectLength(pdu, 2 + byteCount, replyError);
      if (byteCount === 0 || byteCount % 2 !== 0) throw replyError(`bad register byte count ${byteCount}`);
      if (req) checkEcho('register count', byteCount / 2, expectedQuantity(req));
      return { fc, registers: readRegisters(pdu, 2, byteCount / 2) };
    }
    case 5: {
      expectLength(pdu, 5, replyError);
      const address = pdu.readUInt16BE(1);
      const word = pdu.readUInt16BE(3);
      if (word !== COIL_ON && word !== COIL_OFF) throw replyError(`bad coil value 0x${word.toString(16)}`);
      const value = word === COIL_ON;
      if (req?.fc === 5) {
        checkEcho('address', address, req.address);
        if (value !== req.value) throw replyError(`reply coil value ${value} does not match request`);
      }
      return { fc, address, value };
    }
    case 6: {
      expectLength(pdu, 5, replyError);
      const address = pdu.readUInt16BE(1);
      const value = pdu.readUInt16BE(3);
      if (req?.fc === 6) {
        checkEcho('address', address, req.address);
        checkEcho('value', value, req.value);
      }
      return { fc, address, value };
    }
    case 15:
    case 16: {
      expectLength(pdu, 5, replyError);
      const address = pdu.readUInt16BE(1);
      const quantity = pdu.readUInt16BE(3);
      if (req) {
        checkEcho('address', address, req.address);
        checkEcho('quantity', quantity, expectedQuantity(req));
      }
      return { fc, address, quantity };
    }
    default:
      throw replyError(`unsupported function code ${fc}`);
  }
}

// ---------------------------------------------------------------- framing help

/**
 * Length of the PDU starting at `buf[offset]`, looking only at bytes before
 * `end`. `undefined` = not enough bytes yet to tell; -1 = unknown function.
 * Transports use this to find frame boundaries without decoding.
 */
export function requestPduLengthWithin(buf: Uint8Array, offset: number, end: number): number | undefined {
  if (offset >= end) return undefined;
  switch (buf[offset]) {
    case 1:
    case 2:
    case 3:
    case 4:
    case 5:
    case 6:
      return 5;
    case 15:
    case 16:
      return offset + 5 < end ? 6 + buf[offset + 5]! : undefined;
    default:
      return -1;
  }
}

export function responsePduLengthWithin(buf: Uint8Array, offset: number, end: number): number | undefined {
  if (offset >= end) return undefined;
  const rawFc = buf[offset]!;
  switch (rawFc & ~EXCEPTION_FLAG) {
    case 1:
    case 2:
    case 3:
    case 4:
      if (rawFc & EXCEPTION_FLAG) return 2;
      return offset + 1 < end ? 2 + buf[offset + 1]! : undefined;
    case 5:
    case 6:
    case 15:
    case 16:
      return rawFc & EXCEPTION_FLAG ? 2 : 5;
    default:
      return -1;
  }
}

export function requestPduLength(buf: Buffer, offset: number): number | undefined {
  return requestPduLengthWithin(buf, offset, buf.length);
}

export function responsePduLength(buf: Buffer, offset: number): number | undefined {
  return responsePduLengthWithin(buf, offset, buf.length);
}
