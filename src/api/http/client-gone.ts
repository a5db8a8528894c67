import type { ServerResponse } from 'node:http';
import { GoneSignal } from '../../modbus/gone-signal.js';
import type { ClientSignal } from '../../modbus/request-context.js';

// A signal for "the client of this HTTP request has gone": the connection
// closed before the response was sent (see GoneSignal for why not an
// AbortController).

export function clientGone(res: ServerResponse): ClientSignal {
  const signal = new GoneSignal();
  res.once('close', () => {
    if (!res.writableFinished) signal.abort();
  });
  return signal;
}
