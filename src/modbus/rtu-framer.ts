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
// Unit, exception function, exception code, CRC.
const MIN_ADU_LENGTH = 5;
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
  /** Bytes were discarded since the last good frame or reset(). */
  private resynchronising = false;

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
    this.resynchronising = false;
  }

  push(chunk: Buffer): void {
    this.queue.feed(chunk, this.parseBuffered);
  }

  private readonly parseBuffered = (): void => this.parse();

  private parse(): void {
    const queue = this.queue;
    // Positions are re-read on every iteration because onFrame may reset() or push().
    while (queue.length >= 2) {
      const start = queue.start;
      const frameLength = this.frameLengthAt(start);
      if (frameLength < 0) {
        this.discardBytes(1);
        continue;
      }
      if (frameLength === 0 || start + frameLength > queue.end) {
        if (!this.resynchronising) return;
        // After garbage the head is only a guess and may claim a length that
        // swallows the real frame; a complete, CRC-valid frame further on is
        // better evidence than waiting for the guess to fill up.
        const later = this.findCompleteFrame(start + 1);
        if (later < 0) return;
        this.discardBytes(later - start);
        continue;
      }
      const crcOffset = start + frameLength - CRC_LENGTH;
      if (!this.crcMatches(start, crcOffset)) {
        this.stats.crcErrors++;
        this.discardBytes(1);
        continue;
      }
      const unit = queue.bytes[start]!;
      const pdu = queue.copyOut(start + 1, crcOffset);
      queue.consumeTo(start + frameLength);
      this.resynchronising = false;
      this.stats.frames++;
      this.onFrame(unit, pdu);
    }
  }

  /** Whole ADU length of the candidate at `offset`: 0 = not known yet, -1 = impossible. */
  private frameLengthAt(offset: number): number {
    const pduLength = this.pduLength(this.queue.bytes, offset + 1, this.queue.end);
    if (pduLength === undefined) return 0;
    if (pduLength < 0 || pduLength > MAX_PDU_LENGTH) return -1;
    return 1 + pduLength + CRC_LENGTH;
  }

  private crcMatches(start: number, crcOffset: number): boolean {
    const bytes = this.queue.bytes;
    const received = bytes[crcOffset]! | (bytes[crcOffset + 1]! << 8);
    return crc16(bytes, start, crcOffset) === received;
  }

  private findCompleteFrame(from: number): number {
    const end = this.queue.end;
    for (let offset = from; offset + MIN_ADU_LENGTH <= end; offset++) {
      const frameLength = this.frameLengthAt(offset);
      if (frameLength <= 0 || offset + frameLength > end) continue;
      if (this.crcMatches(offset, offset + frameLength - CRC_LENGTH)) return offset;
    }
    return -1;
  }

  // parse() rejects a bad candidate by one byte, not by its claimed length, so
  // a real frame that starts inside it stays findable.
  private discardBytes(count: number): void {
    this.queue.consumeTo(this.queue.start + count);
    this.stats.discardedBytes += count;
    this.resynchronising = true;
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
