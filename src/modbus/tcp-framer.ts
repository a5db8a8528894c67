// Modbus TCP framing: MBAP header (transaction id, protocol id 0, length of
// unit + PDU, unit id) followed by the PDU. Unlike RTU the length field makes
// framing exact, so any inconsistency means the stream is lost.

import { ByteQueue } from './byte-queue.js';
import { MAX_PDU_LENGTH } from './pdu.js';

const MBAP_LENGTH = 7;
const MIN_LENGTH_FIELD = 2; // unit + function code
const MAX_LENGTH_FIELD = 1 + MAX_PDU_LENGTH;
const INITIAL_CAPACITY = 1024;

export function encodeMbap(transactionId: number, unit: number, pdu: Buffer): Buffer {
  if (!Number.isInteger(transactionId) || transactionId < 0 || transactionId > 0xffff) {
    throw new RangeError(`transaction id must be 0..65535, got ${transactionId}`);
  }
  if (!Number.isInteger(unit) || unit < 0 || unit > 255) {
    throw new RangeError(`unit must be 0..255, got ${unit}`);
  }
  if (pdu.length < 1 || pdu.length > MAX_PDU_LENGTH) {
    throw new RangeError(`PDU length must be 1..${MAX_PDU_LENGTH}, got ${pdu.length}`);
  }
  const adu = Buffer.allocUnsafe(MBAP_LENGTH + pdu.length);
  adu.writeUInt16BE(transactionId, 0);
  adu.writeUInt16BE(0, 2);
  adu.writeUInt16BE(1 + pdu.length, 4);
  adu[6] = unit;
  pdu.copy(adu, MBAP_LENGTH);
  return adu;
}

export class MbapFramer {
  private readonly queue = new ByteQueue(INITIAL_CAPACITY);

  constructor(
    private readonly onFrame: (transactionId: number, unit: number, pdu: Buffer) => void,
    private readonly onError?: (reason: string) => void,
  ) {}

  get buffered(): number {
    return this.queue.length;
  }

  reset(): void {
    this.queue.clear();
  }

  push(chunk: Buffer): void {
    this.queue.feed(chunk, this.parseBuffered);
  }

  private readonly parseBuffered = (): void => this.parse();

  private parse(): void {
    const queue = this.queue;
    while (queue.length >= MBAP_LENGTH) {
      const start = queue.start;
      const bytes = queue.bytes;
      const protocolId = bytes.readUInt16BE(start + 2);
      const length = bytes.readUInt16BE(start + 4);
      if (protocolId !== 0) return this.fail(`protocol id ${protocolId} is not Modbus (0)`);
      if (length < MIN_LENGTH_FIELD || length > MAX_LENGTH_FIELD) {
        return this.fail(`MBAP length ${length} outside ${MIN_LENGTH_FIELD}..${MAX_LENGTH_FIELD}`);
      }
      const frameEnd = start + 6 + length;
      if (frameEnd > queue.end) return;
      const transactionId = bytes.readUInt16BE(start);
      const unit = bytes[start + 6]!;
      const pdu = queue.copyOut(start + MBAP_LENGTH, frameEnd);
      queue.consumeTo(frameEnd);
      this.onFrame(transactionId, unit, pdu);
    }
  }

  // TCP has no frame markers to resynchronise on, so everything buffered is
  // dropped; the owner is expected to close the connection.
  private fail(reason: string): void {
    this.reset();
    this.onError?.(reason);
  }
}

/**
 * Transaction ids for one connection: 1..65535, then back to 1.
 *
 * 0 is skipped because a wrap to 0 is where careless peers break (0 read as
 * "no transaction"). The sequence has period 65535, so an id comes back only
 * after 65534 other requests have been issued; as long as fewer than 65535
 * requests are in flight at once (a master keeps a handful at most) no two
 * outstanding requests can share an id.
 */
export class TransactionIds {
  private last: number;

  constructor(first = 1) {
    if (!Number.isInteger(first) || first < 1 || first > 0xffff) {
      throw new RangeError(`first transaction id must be 1..65535, got ${first}`);
    }
    this.last = first - 1;
  }

  next(): number {
    this.last = this.last >= 0xffff ? 1 : this.last + 1;
    return this.last;
  }
}
