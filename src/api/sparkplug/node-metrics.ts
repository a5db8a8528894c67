import { DataType, type Metric } from './payload-types.js';

// The edge node's own metrics: bdSeq, the two Node Control commands, and
// read-only properties that tell a SCADA (and a fleet view) what it talks to.

export const REBIRTH = 'Node Control/Rebirth';
export const NEXT_SERVER = 'Node Control/Next Server';
export const UPTIME = 'Properties/Uptime';

export interface NodeProperties {
  version: string;
  model: string;
  serial: string;
  configHash: string;
}

export function bdSeqMetric(bdSeq: number): Metric {
  return { name: 'bdSeq', datatype: DataType.Int64, value: bdSeq };
}

export function uptimeMetric(startedAt: number, now: number): Metric {
  return { name: UPTIME, datatype: DataType.UInt64, value: Math.max(0, Math.floor((now - startedAt) / 1000)), timestamp: now };
}

/** Every metric carries the birth's timestamp: the spec asks for one on each metric of NBIRTH, DBIRTH, NDATA and DDATA. */
export function nodeBirthMetrics(bdSeq: number, properties: NodeProperties, startedAt: number, now: number): Metric[] {
  return [
    { ...bdSeqMetric(bdSeq), timestamp: now },
    // Never aliased (the spec's rule for Rebirth; Next Server follows it).
    { name: REBIRTH, datatype: DataType.Boolean, value: false, timestamp: now },
    { name: NEXT_SERVER, datatype: DataType.Boolean, value: false, timestamp: now },
    { name: 'Properties/iogate Version', datatype: DataType.String, value: properties.version, timestamp: now },
    { name: 'Properties/Model', datatype: DataType.String, value: properties.model, timestamp: now },
    { name: 'Properties/Serial', datatype: DataType.String, value: properties.serial, timestamp: now },
    { name: 'Properties/Config Hash', datatype: DataType.String, value: properties.configHash, timestamp: now },
    uptimeMetric(startedAt, now),
  ];
}
