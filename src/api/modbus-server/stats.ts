// What the Modbus TCP server did, for /metrics. Plain counters, read by the
// metrics page on each scrape.

export interface ModbusServerStats {
  connections: number;
  /** Connections refused: not on the allow list, or over the connection bound. */
  refusedConnections: number;
  requests: number;
  /** Exception replies by exception code. */
  exceptions: Map<number, number>;
  /** Reads of polled registers answered from the poll cache. */
  cacheHits: number;
  /** Requests sent on to a board through iogate's bus queue. */
  passthroughs: number;
  /** Writes refused by the control layer (interlocks, covers, pulses) or because the server is read-only. */
  refusedWrites: number;
  /** Connections closed for a stream that is not Modbus TCP, or too much unanswered. */
  protocolErrors: number;
  /** Writes carried out, by who wrote them (`modbus:<client address>`); at most MAX_WRITERS names, the rest as `other`. */
  writesBy: Map<string, number>;
}

/** Distinct writers named in the metrics: a label per client address must not grow without bound. */
export const MAX_WRITERS = 64;

export function countWrite(stats: ModbusServerStats, who: string): void {
  const name = stats.writesBy.has(who) || stats.writesBy.size < MAX_WRITERS ? who : 'other';
  stats.writesBy.set(name, (stats.writesBy.get(name) ?? 0) + 1);
}

export function newModbusServerStats(): ModbusServerStats {
  return { connections: 0, refusedConnections: 0, requests: 0, exceptions: new Map(), cacheHits: 0, passthroughs: 0, refusedWrites: 0, protocolErrors: 0, writesBy: new Map() };
}
