// The owserver network protocol (OWFS): every message, in both directions, is
// a header of six big-endian 32-bit integers followed by a payload. A request
// header says version, payload length, message type, flags, size and offset;
// a reply header says version, payload length, return value, flags, size and
// offset. A reply whose payload length is -1 is a keep-alive ("still
// working"), sent while a slow read is under way; the real reply follows.

export const HEADER_BYTES = 24;

/**
 * Largest payload accepted. owserver's own replies stay far below (a
 * directory of a few hundred devices is a few KiB); a length field above this
 * is garbage or hostile and ends the exchange instead of being buffered.
 */
export const MAX_PAYLOAD_BYTES = 64 * 1024;

export const MESSAGE = {
  ERROR: 0,
  NOP: 1,
  READ: 2,
  WRITE: 3,
  DIR: 4,
  SIZE: 5,
  PRESENCE: 6,
  DIRALL: 7,
  GET: 8,
} as const;

/**
 * Request flags. Addresses come back as `28.95DCD5090000.35` (family, id,
 * CRC), which is EVOK's `address`; temperatures in Celsius (scale bits 0).
 */
export const FLAG = {
  OWNET: 0x0000_0100,
  FORMAT_FAMILY_ID_CRC: 0x0200_0000,
} as const;
export const DEFAULT_FLAGS = FLAG.OWNET | FLAG.FORMAT_FAMILY_ID_CRC;

/** Payload length of a keep-alive reply. */
export const KEEP_ALIVE = -1;

export interface Message {
  version: number;
  /** Payload length as sent; -1 for a keep-alive. */
  payloadLength: number;
  /** Message type in a request, return value in a reply (negative: an errno). */
  typeOrRet: number;
  flags: number;
  size: number;
  offset: number;
  payload: Buffer;
}

export class OwProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OwProtocolError';
  }
}

export interface RequestFields {
  type: number;
  /** Path such as `/28.95DCD5090000.35/temperature`; sent NUL-terminated. */
  path: string;
  flags?: number;
  /** Most bytes the reply may carry (READ), or the length of `data` (WRITE). */
  size?: number;
  offset?: number;
  /** Bytes to write after the path (WRITE only). */
  data?: Buffer;
}

export function encodeRequest({ type, path, flags = DEFAULT_FLAGS, size = 8192, offset = 0, data }: RequestFields): Buffer {
  const body = Buffer.concat([Buffer.from(`${path}\0`, 'utf8'), data ?? Buffer.alloc(0)]);
  return encodeMessage({ version: 0, payloadLength: body.length, typeOrRet: type, flags, size: data ? data.length : size, offset, payload: body });
}

/** A reply as owserver sends it: `ret` is the byte count of a read or 0, negative for an error. */
export function encodeReply(ret: number, payload: Buffer, flags = DEFAULT_FLAGS): Buffer {
  return encodeMessage({ version: 0, payloadLength: payload.length, typeOrRet: ret, flags, size: payload.length, offset: 0, payload });
}

export function encodeMessage(message: Message): Buffer {
  const header = Buffer.alloc(HEADER_BYTES);
  header.writeInt32BE(message.version, 0);
  header.writeInt32BE(message.payloadLength, 4);
  header.writeInt32BE(message.typeOrRet, 8);
  header.writeInt32BE(message.flags | 0, 12);
  header.writeInt32BE(message.size, 16);
  header.writeInt32BE(message.offset, 20);
  return message.payloadLength > 0 ? Buffer.concat([header, message.payload]) : header;
}

/**
 * Cuts a byte stream into messages. Holds at most one header and one payload
 * of MAX_PAYLOAD_BYTES; anything that cannot be a message (a negative length
 * other than keep-alive, a length over the bound, a version that is not 0)
 * is an OwProtocolError and the stream is not read further.
 */
export class MessageReader {
  private chunks: Buffer[] = [];
  private buffered = 0;
  private failed = false;

  /** Adds bytes; returns the messages completed by them. Throws OwProtocolError on a malformed stream. */
  push(chunk: Buffer): Message[] {
    if (this.failed) throw new OwProtocolError('stream already rejected');
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    const messages: Message[] = [];
    for (;;) {
      if (this.buffered < HEADER_BYTES) return messages;
      const header = this.peek(HEADER_BYTES);
      const version = header.readInt32BE(0);
      const payloadLength = header.readInt32BE(4);
      if (version !== 0) this.fail(`unknown protocol version ${version}`);
      if (payloadLength < KEEP_ALIVE) this.fail(`negative payload length ${payloadLength}`);
      if (payloadLength > MAX_PAYLOAD_BYTES) this.fail(`payload length ${payloadLength} is over the ${MAX_PAYLOAD_BYTES}-byte limit`);
      const total = HEADER_BYTES + Math.max(payloadLength, 0);
      if (this.buffered < total) return messages;
      const bytes = this.take(total);
      messages.push({
        version,
        payloadLength,
        typeOrRet: bytes.readInt32BE(8),
        flags: bytes.readInt32BE(12),
        size: bytes.readInt32BE(16),
        offset: bytes.readInt32BE(20),
        payload: bytes.subarray(HEADER_BYTES),
      });
    }
  }

  private fail(message: string): never {
    this.failed = true;
    this.chunks = [];
    this.buffered = 0;
    throw new OwProtocolError(message);
  }

  private peek(count: number): Buffer {
    if (this.chunks[0]!.length < count) this.chunks = [Buffer.concat(this.chunks)];
    return this.chunks[0]!.subarray(0, count);
  }

  private take(count: number): Buffer {
    const all = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
    const rest = all.subarray(count);
    this.chunks = rest.length > 0 ? [rest] : [];
    this.buffered = rest.length;
    return Buffer.from(all.subarray(0, count));
  }
}

/** The data of a reply: `size` bytes of the payload when the server says so, else the whole payload. */
export function replyData(message: Message): Buffer {
  const { payload, size } = message;
  return size >= 0 && size <= payload.length ? payload.subarray(0, size) : payload;
}

/** Text of a reply, without the NUL terminators owserver may add. */
export function replyText(message: Message): string {
  return replyData(message).toString('utf8').replace(/\0+$/, '');
}
