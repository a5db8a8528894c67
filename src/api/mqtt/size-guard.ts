import { randomBytes } from 'node:crypto';
import { Transform, type Duplex, type TransformCallback } from 'node:stream';

// The size bound on what the broker sends us, applied to the bytes as they
// arrive, before mqtt.js's parser buffers a packet whole. With MQTT 5 the
// broker is told our Maximum Packet Size in CONNECT and drops larger
// publishes itself; a 3.1.1 broker has no such notion and forwards whatever
// its own limit lets through (Mosquitto's default: 256 MB). So every packet's
// fixed header is read here: a PUBLISH larger than the bound keeps its topic
// and packet identifier (so mqtt.js still acknowledges it at its QoS, and the
// command handler can answer it) and its payload, never held, is replaced by
// OVERSIZE_MARKER. Everything else passes unchanged.

/** The payload that stands for one that was too large and was dropped unread: random, so no publisher can send it. */
const OVERSIZE_MARKER = randomBytes(16);

export function isOversizeMarker(payload: Buffer): boolean {
  return payload.length === OVERSIZE_MARKER.length && payload.equals(OVERSIZE_MARKER);
}

const PUBLISH = 3;

/** A PUBLISH too large to keep: its start is gathered until the topic and packet identifier are known. */
interface Oversize {
  first: number;
  remaining: number;
  /** Its first bytes: topic length, topic, packet identifier (at most 65,539 bytes). */
  start: Buffer;
}

export class PacketSizeGuard extends Transform {
  /** Bytes of the fixed header read so far (type byte and remaining length). */
  private header: number[] = [];
  private passing = 0;
  private skipping = 0;
  private oversize: Oversize | undefined;

  constructor(
    /** Largest packet passed whole, fixed header included. */
    private readonly maxBytes: number,
    private readonly protocolVersion: () => number,
    private readonly onDropped: (bytes: number) => void = () => undefined,
    /** Called with the bytes of each read dropped unread. */
    private readonly onSkipped: (bytes: number) => void = () => undefined,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    let at = 0;
    while (at < chunk.length) {
      if (this.passing > 0) {
        const end = Math.min(chunk.length, at + this.passing);
        this.push(chunk.subarray(at, end));
        this.passing -= end - at;
        at = end;
      } else if (this.skipping > 0) {
        const end = Math.min(chunk.length, at + this.skipping);
        this.skipping -= end - at;
        this.onSkipped(end - at);
        at = end;
      } else if (this.oversize) {
        at = this.gather(this.oversize, chunk, at);
      } else {
        at = this.readHeader(chunk, at);
      }
    }
    done();
  }

  /** Reads fixed-header bytes; once complete, decides whether the packet passes. */
  private readHeader(chunk: Buffer, at: number): number {
    const byte = chunk[at++]!;
    this.header.push(byte);
    if (this.header.length === 1) return at;
    // Remaining length: 7 bits a byte, high bit = more follow, at most 4 bytes.
    if (byte & 0x80 && this.header.length < 5) return at;
    const header = this.header;
    this.header = [];
    let remaining = 0;
    for (let i = header.length - 1; i >= 1; i--) remaining = remaining * 128 + (header[i]! & 0x7f);
    const total = header.length + remaining;
    if (header[0]! >> 4 === PUBLISH && total > this.maxBytes) {
      this.onDropped(total);
      this.oversize = { first: header[0]!, remaining, start: Buffer.alloc(0) };
      return at;
    }
    // Malformed lengths pass too: mqtt.js's parser reports them.
    this.push(Buffer.from(header));
    this.passing = remaining;
    return at;
  }

  /** Collects the topic and packet identifier of an oversize PUBLISH, then sends it on with the marker as payload. */
  private gather(oversize: Oversize, chunk: Buffer, at: number): number {
    const qos = (oversize.first >> 1) & 3;
    // The topic's length (2 bytes), then the topic and, at QoS 1 and 2, the packet identifier.
    const needed = (): number => (oversize.start.length < 2 ? 2 : 2 + oversize.start.readUInt16BE(0) + (qos > 0 ? 2 : 0));
    while (at < chunk.length && oversize.start.length < needed() && oversize.start.length < oversize.remaining) {
      const take = Math.min(chunk.length - at, needed() - oversize.start.length, oversize.remaining - oversize.start.length);
      oversize.start = Buffer.concat([oversize.start, chunk.subarray(at, at + take)]);
      at += take;
    }
    const complete = oversize.start.length >= needed();
    if (!complete && oversize.start.length < oversize.remaining) return at;
    if (complete) {
      // MQTT 5 has properties after the packet identifier: none are kept.
      const properties = this.protocolVersion() === 5 ? Buffer.of(0) : Buffer.alloc(0);
      const body = Buffer.concat([oversize.start, properties, OVERSIZE_MARKER]);
      this.push(Buffer.concat([Buffer.of(oversize.first), remainingLength(body.length), body]));
    }
    // A PUBLISH too short for its own topic is dropped whole.
    this.skipping = oversize.remaining - oversize.start.length;
    this.oversize = undefined;
    return at;
  }
}

function remainingLength(length: number): Buffer {
  const bytes: number[] = [];
  do {
    let byte = length % 128;
    length = Math.floor(length / 128);
    if (length > 0) byte |= 0x80;
    bytes.push(byte);
  } while (length > 0);
  return Buffer.from(bytes);
}

/**
 * Puts a PacketSizeGuard between the broker's stream and whatever mqtt.js
 * pipes it into (its parser). mqtt.js reads the stream only through pipe().
 */
export function guardIncoming(stream: Duplex, guard: () => PacketSizeGuard): Duplex {
  const pipe = stream.pipe.bind(stream);
  stream.pipe = (<T extends NodeJS.WritableStream>(destination: T, options?: { end?: boolean }): T => {
    const filter = guard();
    pipe(filter);
    return filter.pipe(destination, options);
  }) as typeof stream.pipe;
  return stream;
}
