import type { ServerResponse } from 'node:http';
import type { ClientSignal } from '../../modbus/request-context.js';

// A signal for "the client of this HTTP request has gone": the connection
// closed before the response was sent. Writes still waiting for the line are
// then dropped instead of being sent for nobody.
//
// Not an AbortController: its AbortSignal is an EventTarget of about 1 KB
// (two Maps, a dictionary of symbol-keyed fields, a listener record per
// listener), made for every write request. A confirmed write lives until
// the slave answers, across young-generation collections, so under a stream
// of writes those signals were most of what V8 promoted to the old
// generation (bench: heap sampling under POST load). This one is a few
// fields and a closure.

class ResponseGone implements ClientSignal {
  aborted = false;
  private listeners: Array<() => void> | undefined;

  addEventListener(_type: 'abort', listener: () => void): void {
    if (this.aborted) return;
    (this.listeners ??= []).push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const index = this.listeners?.indexOf(listener) ?? -1;
    if (index >= 0) this.listeners!.splice(index, 1);
  }

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    const listeners = this.listeners;
    this.listeners = undefined;
    if (listeners) for (const listener of listeners) listener();
  }
}

export function clientGone(res: ServerResponse): ClientSignal {
  const signal = new ResponseGone();
  res.once('close', () => {
    if (!res.writableFinished) signal.abort();
  });
  return signal;
}
