import { DataType, METRIC_FIELD, PAYLOAD_FIELD, WIRE, valueFieldOf, type Metric, type MetricValue, type Payload } from './payload-types.js';

// Protobuf bytes → Sparkplug B payload, for the commands (NCMD, DCMD) a host
// sends. Whatever arrives comes from the network: every length, count and
// varint is checked against what is left and against fixed caps, nested
// messages (metadata, property sets, data sets, templates) are refused
// rather than followed, and the API returns an error instead of throwing.

export interface DecodeLimits {
  /** Whole payload, bytes. */
  maxBytes: number;
  /** Metrics in one payload. */
  maxMetrics: number;
  /** One string (name, value, uuid), bytes. */
  maxStringBytes: number;
}

export const DEFAULT_DECODE_LIMITS: DecodeLimits = { maxBytes: 64 * 1024, maxMetrics: 1024, maxStringBytes: 4096 };

export type DecodeResult = { ok: true; payload: Payload } | { ok: false; error: string };

class DecodeError extends Error {}

const utf8 = new TextDecoder('utf-8', { fatal: true });

class Reader {
  pos: number;

  constructor(
    readonly bytes: Uint8Array,
    start: number,
    readonly end: number,
  ) {
    this.pos = start;
  }

  get done(): boolean {
    return this.pos >= this.end;
  }

  /** A varint as bigint (up to 64 bits); truncated or over-long ones are errors. */
  varint64(): bigint {
    let result = 0n;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw new DecodeError(`truncated varint at byte ${this.pos}`);
      const byte = this.bytes[this.pos++]!;
      if (i === 9 && byte > 1) throw new DecodeError(`varint at byte ${this.pos - 10} overflows 64 bits`);
      result |= BigInt(byte & 0x7f) << BigInt(7 * i);
      if (byte < 0x80) return result;
    }
    throw new DecodeError(`varint at byte ${this.pos - 10} is longer than 10 bytes`);
  }

  /** A varint that must fit a safe integer (tags, lengths, counters). */
  varint(what: string): number {
    const value = this.varint64();
    if (value > BigInt(Number.MAX_SAFE_INTEGER)) throw new DecodeError(`${what} ${value} is too large`);
    return Number(value);
  }

  length(limit: number, what: string): number {
    const length = this.varint(`length of ${what}`);
    if (length > this.end - this.pos) throw new DecodeError(`${what} claims ${length} bytes, only ${this.end - this.pos} left`);
    if (length > limit) throw new DecodeError(`${what} of ${length} bytes exceeds ${limit}`);
    return length;
  }

  fixed(bytes: 4 | 8, what: string): DataView {
    if (this.end - this.pos < bytes) throw new DecodeError(`truncated ${what}`);
    const view = new DataView(this.bytes.buffer, this.bytes.byteOffset + this.pos, bytes);
    this.pos += bytes;
    return view;
  }

  text(limit: number, what: string): string {
    const length = this.length(limit, what);
    const slice = this.bytes.subarray(this.pos, this.pos + length);
    this.pos += length;
    try {
      return utf8.decode(slice);
    } catch {
      throw new DecodeError(`${what} is not valid UTF-8`);
    }
  }

  /** Skips an unknown field; groups (deprecated) and invalid wire types are refused. */
  skip(field: number, wire: number, limit: number): void {
    switch (wire) {
      case WIRE.varint:
        this.varint64();
        return;
      case WIRE.fixed64:
        this.fixed(8, `field ${field}`);
        return;
      case WIRE.fixed32:
        this.fixed(4, `field ${field}`);
        return;
      case WIRE.bytes:
        this.pos += this.length(limit, `field ${field}`);
        return;
      default:
        throw new DecodeError(`field ${field} has wire type ${wire}, which is not accepted`);
    }
  }
}

export function decodePayload(bytes: Uint8Array, limits: DecodeLimits = DEFAULT_DECODE_LIMITS): DecodeResult {
  try {
    if (!(bytes instanceof Uint8Array)) throw new DecodeError('payload is not bytes');
    if (bytes.length > limits.maxBytes) throw new DecodeError(`payload of ${bytes.length} bytes exceeds ${limits.maxBytes}`);
    return { ok: true, payload: readPayload(new Reader(bytes, 0, bytes.length), limits) };
  } catch (error) {
    if (error instanceof DecodeError) return { ok: false, error: error.message };
    // Anything else is a bug of ours, still not the caller's crash.
    return { ok: false, error: `undecodable payload (${error instanceof Error ? error.message : String(error)})` };
  }
}

function expectWire(field: string, wire: number, expected: number): void {
  if (wire !== expected) throw new DecodeError(`${field} has wire type ${wire}, expected ${expected}`);
}

function readPayload(reader: Reader, limits: DecodeLimits): Payload {
  const payload: Payload = { metrics: [] };
  while (!reader.done) {
    const tag = reader.varint('tag');
    const field = Math.floor(tag / 8);
    const wire = tag % 8;
    if (field === 0) throw new DecodeError('field number 0');
    switch (field) {
      case PAYLOAD_FIELD.timestamp:
        expectWire('timestamp', wire, WIRE.varint);
        payload.timestamp = reader.varint('timestamp');
        break;
      case PAYLOAD_FIELD.metrics: {
        expectWire('metric', wire, WIRE.bytes);
        if (payload.metrics.length >= limits.maxMetrics) throw new DecodeError(`more than ${limits.maxMetrics} metrics`);
        const length = reader.length(limits.maxBytes, 'metric');
        payload.metrics.push(readMetric(new Reader(reader.bytes, reader.pos, reader.pos + length), limits));
        reader.pos += length;
        break;
      }
      case PAYLOAD_FIELD.seq:
        expectWire('seq', wire, WIRE.varint);
        payload.seq = reader.varint('seq');
        break;
      case PAYLOAD_FIELD.uuid:
        expectWire('uuid', wire, WIRE.bytes);
        payload.uuid = reader.text(limits.maxStringBytes, 'uuid');
        break;
      case PAYLOAD_FIELD.body: {
        expectWire('body', wire, WIRE.bytes);
        const length = reader.length(limits.maxBytes, 'body');
        payload.body = reader.bytes.slice(reader.pos, reader.pos + length);
        reader.pos += length;
        break;
      }
      default:
        reader.skip(field, wire, limits.maxBytes);
    }
  }
  return payload;
}

const NESTED: ReadonlyMap<number, string> = new Map([
  [METRIC_FIELD.metadata, 'metadata'],
  [METRIC_FIELD.properties, 'properties'],
  [METRIC_FIELD.datasetValue, 'dataset_value'],
  [METRIC_FIELD.templateValue, 'template_value'],
]);

function readMetric(reader: Reader, limits: DecodeLimits): Metric {
  const metric: Metric = {};
  let isNull = false;
  let valueField: number | undefined;
  let value: MetricValue | undefined;
  while (!reader.done) {
    const tag = reader.varint('tag');
    const field = Math.floor(tag / 8);
    const wire = tag % 8;
    if (field === 0) throw new DecodeError('field number 0 in a metric');
    const nested = NESTED.get(field);
    if (nested !== undefined) throw new DecodeError(`metric ${nested} is not accepted in a command`);
    switch (field) {
      case METRIC_FIELD.name:
        expectWire('metric name', wire, WIRE.bytes);
        metric.name = reader.text(limits.maxStringBytes, 'metric name');
        break;
      case METRIC_FIELD.alias:
        expectWire('metric alias', wire, WIRE.varint);
        metric.alias = reader.varint('alias');
        break;
      case METRIC_FIELD.timestamp:
        expectWire('metric timestamp', wire, WIRE.varint);
        metric.timestamp = reader.varint('metric timestamp');
        break;
      case METRIC_FIELD.datatype: {
        expectWire('datatype', wire, WIRE.varint);
        const datatype = reader.varint64();
        if (datatype > 0xffff_ffffn) throw new DecodeError(`datatype ${datatype} is not a uint32`);
        metric.datatype = Number(datatype);
        break;
      }
      case METRIC_FIELD.isHistorical:
        expectWire('is_historical', wire, WIRE.varint);
        metric.isHistorical = reader.varint64() !== 0n;
        break;
      case METRIC_FIELD.isTransient:
        expectWire('is_transient', wire, WIRE.varint);
        metric.isTransient = reader.varint64() !== 0n;
        break;
      case METRIC_FIELD.isNull:
        expectWire('is_null', wire, WIRE.varint);
        isNull = reader.varint64() !== 0n;
        break;
      case METRIC_FIELD.intValue:
        expectWire('int_value', wire, WIRE.varint);
        value = Number(BigInt.asUintN(32, reader.varint64()));
        valueField = field;
        break;
      case METRIC_FIELD.longValue:
        expectWire('long_value', wire, WIRE.varint);
        value = reader.varint64();
        valueField = field;
        break;
      case METRIC_FIELD.floatValue:
        expectWire('float_value', wire, WIRE.fixed32);
        value = reader.fixed(4, 'float_value').getFloat32(0, true);
        valueField = field;
        break;
      case METRIC_FIELD.doubleValue:
        expectWire('double_value', wire, WIRE.fixed64);
        value = reader.fixed(8, 'double_value').getFloat64(0, true);
        valueField = field;
        break;
      case METRIC_FIELD.booleanValue:
        expectWire('boolean_value', wire, WIRE.varint);
        value = reader.varint64() !== 0n;
        valueField = field;
        break;
      case METRIC_FIELD.stringValue:
        expectWire('string_value', wire, WIRE.bytes);
        value = reader.text(limits.maxStringBytes, 'string_value');
        valueField = field;
        break;
      case METRIC_FIELD.bytesValue: {
        expectWire('bytes_value', wire, WIRE.bytes);
        const length = reader.length(limits.maxStringBytes, 'bytes_value');
        value = reader.bytes.slice(reader.pos, reader.pos + length);
        reader.pos += length;
        valueField = field;
        break;
      }
      default:
        reader.skip(field, wire, limits.maxBytes);
    }
  }
  if (isNull) {
    metric.value = null;
  } else if (value !== undefined) {
    metric.value = typedValue(metric.datatype, valueField!, value);
  }
  return metric;
}

/** The value as its declared datatype reads it: signed types from two's complement, 64-bit as number when safe. */
function typedValue(datatype: number | undefined, field: number, value: MetricValue): MetricValue {
  if (datatype !== undefined && valueFieldOf(datatype) !== undefined && valueFieldOf(datatype) !== field) {
    throw new DecodeError(`datatype ${datatype} does not match the value field ${field}`);
  }
  if (typeof value === 'number' && field === METRIC_FIELD.intValue) {
    if (datatype === DataType.Int8) return (value << 24) >> 24;
    if (datatype === DataType.Int16) return (value << 16) >> 16;
    if (datatype === DataType.Int32) return value | 0;
    return value;
  }
  if (typeof value === 'bigint') {
    const signed = datatype === DataType.Int64 ? BigInt.asIntN(64, value) : value;
    return signed >= BigInt(Number.MIN_SAFE_INTEGER) && signed <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(signed) : signed;
  }
  return value;
}
