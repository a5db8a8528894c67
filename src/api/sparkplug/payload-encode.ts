import { DataType, METRIC_FIELD, PAYLOAD_FIELD, WIRE, valueFieldOf, type Metric, type MetricValue, type Payload } from './payload-types.js';

// Sparkplug B payload → protobuf bytes. Hand-rolled: a DDATA carrying one
// changed input is a few dozen bytes, written straight into one buffer
// without a schema library.

const TWO_64 = 1n << 64n;
const textEncoder = new TextEncoder();

/** A growable byte buffer with the protobuf primitives. */
class Writer {
  private buffer: Uint8Array;
  length = 0;

  constructor(size = 256) {
    this.buffer = new Uint8Array(size);
  }

  private room(bytes: number): void {
    if (this.length + bytes <= this.buffer.length) return;
    let size = this.buffer.length * 2;
    while (size < this.length + bytes) size *= 2;
    const grown = new Uint8Array(size);
    grown.set(this.buffer.subarray(0, this.length));
    this.buffer = grown;
  }

  /** An unsigned varint of a non-negative safe integer. */
  varint(value: number): void {
    this.room(10);
    while (value >= 0x80) {
      this.buffer[this.length++] = (value % 0x80) | 0x80;
      value = Math.floor(value / 0x80);
    }
    this.buffer[this.length++] = value;
  }

  /** A 64-bit varint of any integer; negative ones as two's complement (10 bytes). */
  varint64(value: bigint): void {
    let v = value < 0n ? value + TWO_64 : value;
    this.room(10);
    while (v >= 0x80n) {
      this.buffer[this.length++] = Number(v & 0x7fn) | 0x80;
      v >>= 7n;
    }
    this.buffer[this.length++] = Number(v);
  }

  tag(field: number, wire: number): void {
    this.varint(field * 8 + wire);
  }

  bytes(data: Uint8Array): void {
    this.varint(data.length);
    this.room(data.length);
    this.buffer.set(data, this.length);
    this.length += data.length;
  }

  float(value: number): void {
    this.room(4);
    new DataView(this.buffer.buffer, this.buffer.byteOffset).setFloat32(this.length, value, true);
    this.length += 4;
  }

  double(value: number): void {
    this.room(8);
    new DataView(this.buffer.buffer, this.buffer.byteOffset).setFloat64(this.length, value, true);
    this.length += 8;
  }

  result(): Uint8Array {
    return this.buffer.slice(0, this.length);
  }
}

export function encodePayload(payload: Payload): Uint8Array {
  const writer = new Writer();
  if (payload.timestamp !== undefined) {
    writer.tag(PAYLOAD_FIELD.timestamp, WIRE.varint);
    writer.varint(payload.timestamp);
  }
  const metric = new Writer(64);
  for (const item of payload.metrics) {
    metric.length = 0;
    encodeMetric(metric, item);
    writer.tag(PAYLOAD_FIELD.metrics, WIRE.bytes);
    writer.bytes(metric.result());
  }
  if (payload.seq !== undefined) {
    writer.tag(PAYLOAD_FIELD.seq, WIRE.varint);
    writer.varint(payload.seq);
  }
  if (payload.uuid !== undefined) {
    writer.tag(PAYLOAD_FIELD.uuid, WIRE.bytes);
    writer.bytes(textEncoder.encode(payload.uuid));
  }
  if (payload.body !== undefined) {
    writer.tag(PAYLOAD_FIELD.body, WIRE.bytes);
    writer.bytes(payload.body);
  }
  return writer.result();
}

function encodeMetric(writer: Writer, metric: Metric): void {
  if (metric.name !== undefined) {
    writer.tag(METRIC_FIELD.name, WIRE.bytes);
    writer.bytes(textEncoder.encode(metric.name));
  }
  if (metric.alias !== undefined) {
    writer.tag(METRIC_FIELD.alias, WIRE.varint);
    writer.varint(metric.alias);
  }
  if (metric.timestamp !== undefined) {
    writer.tag(METRIC_FIELD.timestamp, WIRE.varint);
    writer.varint(metric.timestamp);
  }
  if (metric.datatype !== undefined) {
    writer.tag(METRIC_FIELD.datatype, WIRE.varint);
    writer.varint(metric.datatype);
  }
  if (metric.isHistorical) {
    writer.tag(METRIC_FIELD.isHistorical, WIRE.varint);
    writer.varint(1);
  }
  if (metric.isTransient) {
    writer.tag(METRIC_FIELD.isTransient, WIRE.varint);
    writer.varint(1);
  }
  if (metric.properties !== undefined) {
    writer.tag(METRIC_FIELD.properties, WIRE.bytes);
    writer.bytes(propertySet(metric.properties));
  }
  const value = metric.value;
  if (value === null || value === undefined) {
    writer.tag(METRIC_FIELD.isNull, WIRE.varint);
    writer.varint(1);
    return;
  }
  encodeValue(writer, metric.datatype ?? inferredType(value), value);
}

/** A PropertySet of String values: keys (1) and PropertyValues (2) of type (1) and string_value (8). */
function propertySet(properties: Readonly<Record<string, string>>): Uint8Array {
  const set = new Writer(64);
  const value = new Writer(32);
  for (const key of Object.keys(properties)) {
    set.tag(1, WIRE.bytes);
    set.bytes(textEncoder.encode(key));
  }
  for (const text of Object.values(properties)) {
    value.length = 0;
    value.tag(1, WIRE.varint);
    value.varint(DataType.String);
    value.tag(8, WIRE.bytes);
    value.bytes(textEncoder.encode(text));
    set.tag(2, WIRE.bytes);
    set.bytes(value.result());
  }
  return set.result();
}

function inferredType(value: Exclude<MetricValue, null>): number {
  if (typeof value === 'boolean') return DataType.Boolean;
  if (typeof value === 'bigint') return DataType.Int64;
  if (typeof value === 'string') return DataType.String;
  if (value instanceof Uint8Array) return DataType.Bytes;
  return DataType.Double;
}

function encodeValue(writer: Writer, datatype: number, value: Exclude<MetricValue, null>): void {
  const field = valueFieldOf(datatype);
  switch (field) {
    case METRIC_FIELD.intValue: {
      writer.tag(field, WIRE.varint);
      // uint32 on the wire; signed types as their 32-bit two's complement.
      writer.varint(Number(BigInt.asUintN(32, BigInt(Math.trunc(Number(value))))));
      return;
    }
    case METRIC_FIELD.longValue: {
      writer.tag(field, WIRE.varint);
      if (typeof value === 'number' && value >= 0 && Number.isSafeInteger(value)) writer.varint(value);
      else writer.varint64(BigInt.asIntN(64, typeof value === 'bigint' ? value : BigInt(Math.trunc(Number(value)))));
      return;
    }
    case METRIC_FIELD.floatValue:
      writer.tag(field, WIRE.fixed32);
      writer.float(Number(value));
      return;
    case METRIC_FIELD.doubleValue:
      writer.tag(field, WIRE.fixed64);
      writer.double(Number(value));
      return;
    case METRIC_FIELD.booleanValue:
      writer.tag(field, WIRE.varint);
      writer.varint(value ? 1 : 0);
      return;
    case METRIC_FIELD.stringValue:
      writer.tag(field, WIRE.bytes);
      writer.bytes(textEncoder.encode(String(value)));
      return;
    case METRIC_FIELD.bytesValue:
      writer.tag(field, WIRE.bytes);
      writer.bytes(value instanceof Uint8Array ? value : textEncoder.encode(String(value)));
      return;
    default:
      throw new Error(`datatype ${datatype} cannot be encoded by this edge node`);
  }
}
