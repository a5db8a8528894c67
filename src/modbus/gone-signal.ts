import type { ClientSignal } from './request-context.js';

// A signal for "the client has gone" (an HTTP request's connection closed
// before its response, a Modbus TCP connection closed): what it still waits
// for on the line is dropped instead of being sent for nobody.
//
// Not an AbortController: its AbortSignal is an EventTarget of about 1 KB
// (two Maps, a dictionary of symbol-keyed fields, a listener record per
// listener), made for every write request, and adding and removing a listener
// runs a good deal of Node's EventTarget code on every request. A confirmed
// write lives until the slave answers, across young-generation collections,
// so under a stream of writes those signals were most of what V8 promoted to
// the old generation (bench: heap sampling under POST load). This one is a
// few fields and an array.

export class GoneSignal implements ClientSignal {
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
