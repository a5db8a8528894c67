// Modbus RTU framing: ADU = unit byte + PDU + CRC (low byte first).
//
// RTU has no length field or start marker; the spec delimits frames by a
// 3.5-character silence, which a userland serial port cannot observe reliably.
// Instead the expected length is derived from the function code (and byte
// count where there is one) and confirmed by the CRC. The owner calls reset()
// after a timeout, which stands in for the silence.

import { ByteQueue } from './byte-queue.js';
import { crc16 } from './crc.js';
import { MAX_PDU_LENGTH, requestPduLengthWithin, responsePduLengthWithin } from './pdu.js';

const CRC_LENGTH = 2;
const INITIAL_CAPACITY = 512;

export function encodeRtu(unit: number, pdu: Buffer): Buffer {
  if (!Number.isInteger(unit) || unit < 0 || unit > 255) {
    throw new RangeError(`unit must be 0..255, got ${unit}`);
  }
  if (pdu.length < 1 || pdu.length > MAX_PDU_LENGTH) {
    throw new RangeError(`PDU length must be 1..${MAX_PDU_LENGTH}, got ${pdu.length}`);
  }
  const adu = Buffer.allocUnsafe(1 + pdu.length + CRC_LENGTH);
  adu[0] = unit;
  pdu.copy(adu, 1);
  const crc = crc16(adu, 0, 1 + pdu.length);
  adu[1 + pdu.length] = crc & 0xff;
  adu[2 + pdu.length] = crc >>> 8;
  return adu;
}

export interface FramerStats {
  frames: number;
  /** Candidate frames whose CRC did not match; while resynchronising through garbage one bad frame can count several times. */
  crcErrors: number;
  discardedBytes: number;
}

type PduLength = (buf: Uint8Array, offset: number, end: number) => number | undefined;

export class RtuFramer {
  readonly stats: FramerStats = { frames: 0, crcErrors: 0, discardedBytes: 0 };
  private readonly pduLength: PduLength;
  private readonly queue = new ByteQueue(INITIAL_CAPACITY);
  private parsing = false;

  constructor(
    kind: 'request' | 'response',
    private readonly onFrame: (unit: number, pdu: Buffer) => void,
  ) {
    this.pduLength = kind === 'request' ? requestPduLengthWithin : responsePduLengthWithin;
  }

  get buffered(): number {
    return this.queue.length;
  }

  reset(): void {
    this.queue.clear();
  }

  push(chunk: Buffer): void {
    this.queue.append(chunk);
    // A push from inside onFrame only appends; the outer loop picks it up.
    if (this.parsing) return;
    this.parsing = true;
    try {
      this.parse();
    } finally {
      this.parsing = false;
    }
  }

  private parse(): void {
    const queue = this.queue;
    // Positions are re-read on every iteration because onFrame may reset() or push().
    while (queue.length >= 2) {
      const start = queue.start;
      const pduLength = this.pduLength(queue.bytes, start + 1, queue.end);
      if (pduLength === undefined) return;
      if (pduLength < 0 || pduLength > MAX_PDU_LENGTH) {
        this.discardByte();
        continue;
      }
      const crcOffset = start + 1 + pduLength;
      if (crcOffset + CRC_LENGTH > queue.end) return;
      const bytes = queue.bytes;
      const received = bytes[crcOffset]! | (bytes[crcOffset + 1]! << 8);
      if (crc16(bytes, start, crcOffset) !== received) {
        this.stats.crcErrors++;
        this.discardByte();
        continue;
      }
      const unit = bytes[start]!;
      const pdu = queue.copyOut(start + 1, crcOffset);
      queue.consumeTo(crcOffset + CRC_LENGTH);
      this.stats.frames++;
      this.onFrame(unit, pdu);
    }
  }

  // Dropping a single byte (not the whole candidate) keeps a real frame that
  // starts inside the rejected bytes findable.
  private discardByte(): void {
    this.queue.consumeTo(this.queue.start + 1);
    this.stats.discardedBytes++;
  }
}

/**
 * Inter-frame silence t3.5 in milliseconds. Above 19200 baud the spec fixes it
 * at 1.75 ms because character times become too short to time reliably.
 */
export function rtuSilenceMs(baudrate: number, bitsPerChar = 11): number {
  if (!(baudrate > 0)) throw new RangeError(`baudrate must be positive, got ${baudrate}`);
  if (baudrate > 19200) return 1.75;
  return (3.5 * bitsPerChar * 1000) / baudrate;
}
