// Why a Modbus transaction failed. The API layer maps the kind to an HTTP
// status so a caller never sees success for a write that did not happen
// (EVOK#183), and never hears "not sent" about a request that was sent:
//  - timeout, unknown: the request went on the wire and no valid answer came
//    (unknown: the link dropped under it); a write may or may not have been
//    applied (504);
//  - exception, protocol: the slave answered with an error or garbage (502);
//  - disconnected, offline, expired, cancelled, busy: nothing was sent (503):
//    the line is down, the slave is known to be offline, the request's
//    deadline passed while it waited, its client went away, or too many
//    requests already wait for the line.

export type ModbusErrorKind =
  | 'timeout'
  | 'unknown'
  | 'exception'
  | 'disconnected'
  | 'offline'
  | 'expired'
  | 'cancelled'
  | 'busy'
  | 'protocol'
  | 'invalid';

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

/** Failures that say nothing about the slave: the line, the deadline or the client; its scan is not charged. */
export function notSlavesFault(error: unknown): boolean {
  if (!(error instanceof ModbusError)) return false;
  return error.kind === 'disconnected' || error.kind === 'expired' || error.kind === 'cancelled' || error.kind === 'busy';
}
