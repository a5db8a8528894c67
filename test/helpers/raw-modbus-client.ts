import { once } from 'node:events';
import { connect, type Socket } from 'node:net';

// A Modbus TCP master written out byte by byte, independent of iogate's own
// framing code, so a test judges the server with code that shares none of
// its assumptions. Replies are matched by transaction id.

export interface Reply {
  unit: number;
  pdu: Buffer;
}

export class RawModbusClient {
  private buffered = Buffer.alloc(0);
  private nextId = 1;
  private readonly waiting = new Map<number, (reply: Reply | Error) => void>();
  closed = false;

  private constructor(readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.buffered = Buffer.concat([this.buffered, chunk]);
      while (this.buffered.length >= 7) {
        const length = this.buffered.readUInt16BE(4);
        if (this.buffered.length < 6 + length) break;
        const id = this.buffered.readUInt16BE(0);
        const reply: Reply = { unit: this.buffered[6]!, pdu: Buffer.from(this.buffered.subarray(7, 6 + length)) };
        this.buffered = this.buffered.subarray(6 + length);
        this.waiting.get(id)?.(reply);
        this.waiting.delete(id);
      }
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      this.closed = true;
      for (const settle of this.waiting.values()) settle(new Error('the server closed the connection'));
      this.waiting.clear();
    });
  }

  static async connect(port: number, host = '127.0.0.1'): Promise<RawModbusClient> {
    const socket = connect({ port, host });
    await once(socket, 'connect');
    return new RawModbusClient(socket);
  }

  /** Sends `pdu` to `unit`; resolves with the reply PDU, rejects after `limitMs`. */
  request(unit: number, pdu: Buffer, limitMs = 5000): Promise<Buffer> {
    const id = this.nextId++;
    const header = Buffer.alloc(7);
    header.writeUInt16BE(id, 0);
    header.writeUInt16BE(0, 2);
    header.writeUInt16BE(pdu.length + 1, 4);
    header[6] = unit;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no reply to transaction ${id} within ${limitMs} ms`)), limitMs);
      this.waiting.set(id, (reply) => {
        clearTimeout(timer);
        if (reply instanceof Error) reject(reply);
        else resolve(reply.pdu);
      });
      this.socket.write(Buffer.concat([header, pdu]));
    });
  }

  /** Resolves once the server closed the connection (or rejects after `limitMs`). */
  async closedByServer(limitMs = 5000): Promise<void> {
    if (this.closed) return;
    await Promise.race([
      once(this.socket, 'close'),
      new Promise((_, reject) => setTimeout(() => reject(new Error(`the server kept the connection open for ${limitMs} ms`)), limitMs)),
    ]);
  }

  close(): void {
    this.socket.destroy();
  }
}

/** PDUs built by hand. */
export const pdu = {
  read: (fc: 1 | 2 | 3 | 4, address: number, quantity: number) => words(fc, address, quantity),
  writeCoil: (address: number, on: boolean) => words(5, address, on ? 0xff00 : 0),
  writeRegister: (address: number, value: number) => words(6, address, value),
  writeCoils(address: number, values: boolean[]): Buffer {
    const bytes = Buffer.alloc((values.length + 7) >> 3);
    values.forEach((on, i) => {
      if (on) bytes[i >> 3]! |= 1 << (i & 7);
    });
    return Buffer.concat([words(15, address, values.length), Buffer.from([bytes.length]), bytes]);
  },
  writeRegisters(address: number, values: number[]): Buffer {
    const body = Buffer.alloc(2 * values.length);
    values.forEach((value, i) => body.writeUInt16BE(value, 2 * i));
    return Buffer.concat([words(16, address, values.length), Buffer.from([body.length]), body]);
  },
  readWrite(readAddress: number, readQuantity: number, writeAddress: number, values: number[]): Buffer {
    const body = Buffer.alloc(2 * values.length);
    values.forEach((value, i) => body.writeUInt16BE(value, 2 * i));
    const head = Buffer.alloc(9);
    head[0] = 23;
    head.writeUInt16BE(readAddress, 1);
    head.writeUInt16BE(readQuantity, 3);
    head.writeUInt16BE(writeAddress, 5);
    head.writeUInt16BE(values.length, 7);
    return Buffer.concat([head, Buffer.from([body.length]), body]);
  },
};

function words(fc: number, a: number, b: number): Buffer {
  const out = Buffer.alloc(5);
  out[0] = fc;
  out.writeUInt16BE(a, 1);
  out.writeUInt16BE(b, 3);
  return out;
}

/** The registers of an FC3/FC4/FC23 reply. */
export function registersOf(reply: Buffer): number[] {
  const values: number[] = [];
  for (let i = 0; i < reply[1]! / 2; i++) values.push(reply.readUInt16BE(2 + 2 * i));
  return values;
}
