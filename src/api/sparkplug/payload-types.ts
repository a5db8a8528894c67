// The Sparkplug B payload (Eclipse Tahu's sparkplug_b.proto, proto2) as far as
// an edge node uses it: what the encoder writes and what the decoder accepts.

/** Sparkplug B DataType codes. */
export const DataType = {
  Int8: 1,
  Int16: 2,
  Int32: 3,
  Int64: 4,
  UInt8: 5,
  UInt16: 6,
  UInt32: 7,
  UInt64: 8,
  Float: 9,
  Double: 10,
  Boolean: 11,
  String: 12,
  DateTime: 13,
  Text: 14,
  UUID: 15,
  DataSet: 16,
  Bytes: 17,
  File: 18,
  Template: 19,
  PropertySet: 20,
  PropertySetList: 21,
} as const;

export type DataTypeCode = (typeof DataType)[keyof typeof DataType];

export const DATA_TYPE_NAMES: Readonly<Record<number, string>> = Object.fromEntries(Object.entries(DataType).map(([name, code]) => [code, name]));

/** A metric's value; 64-bit integers may be bigint beyond 2^53. null = is_null. */
export type MetricValue = boolean | number | bigint | string | Uint8Array | null;

export interface Metric {
  name?: string;
  alias?: number;
  timestamp?: number;
  datatype?: number;
  isHistorical?: boolean;
  isTransient?: boolean;
  /** Undefined only in a decoded metric that carried no value field at all. */
  value?: MetricValue;
  /** String-valued metric properties (e.g. `engUnit`); sent in births, never read from commands. */
  properties?: Readonly<Record<string, string>>;
}

export interface Payload {
  timestamp?: number;
  metrics: Metric[];
  seq?: number;
  uuid?: string;
  body?: Uint8Array;
}

/** Field numbers of Payload. */
export const PAYLOAD_FIELD = { timestamp: 1, metrics: 2, seq: 3, uuid: 4, body: 5 } as const;

/** Field numbers of Payload.Metric. */
export const METRIC_FIELD = {
  name: 1,
  alias: 2,
  timestamp: 3,
  datatype: 4,
  isHistorical: 5,
  isTransient: 6,
  isNull: 7,
  metadata: 8,
  properties: 9,
  intValue: 10,
  longValue: 11,
  floatValue: 12,
  doubleValue: 13,
  booleanValue: 14,
  stringValue: 15,
  bytesValue: 16,
  datasetValue: 17,
  templateValue: 18,
} as const;

export const WIRE = { varint: 0, fixed64: 1, bytes: 2, startGroup: 3, endGroup: 4, fixed32: 5 } as const;

/** Which value field carries a datatype. */
export function valueFieldOf(datatype: number): number | undefined {
  switch (datatype) {
    case DataType.Int8:
    case DataType.Int16:
    case DataType.Int32:
    case DataType.UInt8:
    case DataType.UInt16:
    case DataType.UInt32:
      return METRIC_FIELD.intValue;
    case DataType.Int64:
    case DataType.UInt64:
    case DataType.DateTime:
      return METRIC_FIELD.longValue;
    case DataType.Float:
      return METRIC_FIELD.floatValue;
    case DataType.Double:
      return METRIC_FIELD.doubleValue;
    case DataType.Boolean:
      return METRIC_FIELD.booleanValue;
    case DataType.String:
    case DataType.Text:
    case DataType.UUID:
      return METRIC_FIELD.stringValue;
    case DataType.Bytes:
    case DataType.File:
      return METRIC_FIELD.bytesValue;
    default:
      return undefined;
  }
}
