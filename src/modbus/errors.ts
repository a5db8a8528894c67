// Why a Modbus transaction failed. The API layer maps the kind to an HTTP
// status (timeout 504, exception 502, disconnected 503) so a caller never sees
// success for a write that did not happen (EVOK#183).

export type ModbusErrorKind = 'timeout' | 'exception' | 'disconnected' | 'protocol' | 'invalid';

export class ModbusError extends Error {
  constructor(
    readonly kind: ModbusErrorKind,
    message: string,
    readonly exceptionCode?: number,
  ) {
    super(message);
    this.name = 'ModbusError';
  }
}
