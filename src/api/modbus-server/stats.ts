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
}

export function newModbusServerStats(): ModbusServerStats {
  return { connections: 0, refusedConnections: 0, requests: 0, exceptions: new Map(), cacheHits: 0, passthroughs: 0, refusedWrites: 0, protocolErrors: 0 };
}
