import {
  EXCEPTION,
  MAX_READ_REGISTERS,
  ModbusPduError,
  decodeRequest,
  encodeResponse,
  type ModbusRequest,
  type ModbusResponse,
} from '../../modbus/pdu.js';
import { exceptionOf, type ClientContext, type SlaveGateway } from './slave-gateway.js';
import type { ModbusServerStats } from './stats.js';

// One request PDU to one reply PDU: decode, route by unit id, turn every
// failure into the exception a gateway answers. Function 23 (read/write
// multiple registers) is taken apart here into its write (first, as the
// standard orders) and its read, each on the ordinary paths, so its write is
// admitted by the same rules as FC16.

export interface UnitRouter {
  gateway(unit: number): SlaveGateway | undefined;
  isVirtual(unit: number): boolean;
  serveVirtual(request: ModbusRequest): ModbusResponse;
}

const READ_WRITE_MULTIPLE = 23;
const MAX_RW_WRITE_REGISTERS = 121;

interface ReadWriteMultiple {
  read: ModbusRequest & { fc: 3 };
  write: ModbusRequest & { fc: 16 };
}

/** FC23's request: read address and quantity, write address, quantity, byte count and values. */
function decodeReadWriteMultiple(pdu: Buffer): ReadWriteMultiple {
  const invalid = (message: string) => new ModbusPduError(EXCEPTION.ILLEGAL_DATA_VALUE, `function 23: ${message}`);
  if (pdu.length < 10) throw invalid(`PDU truncated at ${pdu.length} bytes`);
  const readAddress = pdu.readUInt16BE(1);
  const readQuantity = pdu.readUInt16BE(3);
  const writeAddress = pdu.readUInt16BE(5);
  const writeQuantity = pdu.readUInt16BE(7);
  const byteCount = pdu[9]!;
  if (readQuantity < 1 || readQuantity > MAX_READ_REGISTERS) throw invalid(`read quantity must be 1..${MAX_READ_REGISTERS}, got ${readQuantity}`);
  if (writeQuantity < 1 || writeQuantity > MAX_RW_WRITE_REGISTERS) throw invalid(`write quantity must be 1..${MAX_RW_WRITE_REGISTERS}, got ${writeQuantity}`);
  if (byteCount !== 2 * writeQuantity || pdu.length !== 10 + byteCount) throw invalid(`byte count ${byteCount} does not match write quantity ${writeQuantity}`);
  if (readAddress + readQuantity > 0x10000 || writeAddress + writeQuantity > 0x10000) {
    throw new ModbusPduError(EXCEPTION.ILLEGAL_DATA_ADDRESS, 'function 23: the registers run past 65535');
  }
  const values: number[] = [];
  for (let i = 0; i < writeQuantity; i++) values.push(pdu.readUInt16BE(10 + 2 * i));
  return { read: { fc: 3, address: readAddress, quantity: readQuantity }, write: { fc: 16, address: writeAddress, values } };
}

function encodeReadWriteReply(registers: readonly number[]): Buffer {
  const reply = Buffer.allocUnsafe(2 + 2 * registers.length);
  reply[0] = READ_WRITE_MULTIPLE;
  reply[1] = 2 * registers.length;
  registers.forEach((value, i) => reply.writeUInt16BE(value, 2 + 2 * i));
  return reply;
}

/** Never rejects: every failure is an exception reply. */
export async function dispatch(unit: number, pdu: Buffer, router: UnitRouter, client: ClientContext, stats: ModbusServerStats): Promise<Buffer> {
  stats.requests++;
  const fc = pdu.length > 0 ? pdu[0]! & 0x7f : 0;
  try {
    if (fc === READ_WRITE_MULTIPLE) {
      const { read, write } = decodeReadWriteMultiple(pdu);
      await serve(unit, write, router, client);
      const response = await serve(unit, read, router, client);
      return encodeReadWriteReply('registers' in response ? response.registers : []);
    }
    return encodeResponse(await serve(unit, decodeRequest(pdu), router, client));
  } catch (error) {
    const code = exceptionOf(error);
    stats.exceptions.set(code, (stats.exceptions.get(code) ?? 0) + 1);
    return Buffer.from([fc | 0x80, code]);
  }
}

function serve(unit: number, request: ModbusRequest, router: UnitRouter, client: ClientContext): Promise<ModbusResponse> {
  if (router.isVirtual(unit)) return Promise.resolve(router.serveVirtual(request));
  const gateway = router.gateway(unit);
  if (!gateway) throw new ModbusPduError(EXCEPTION.GATEWAY_TARGET_FAILED, `no board answers at unit ${unit}`);
  return gateway.serve(request, client);
}
