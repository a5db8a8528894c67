import { AsyncLocalStorage } from 'node:async_hooks';

// What the API call behind a bus request still wants: its client's abort
// signal (HTTP request or WebSocket closed) and an optional deadline. The one
// write path every API shares opens the context; the slave reads it when it
// queues a write, so every device's write honours it without each device
// passing it along. Polls never run inside one.

/**
 * What the bus asks of a client's signal: whether the client has gone, and a
 * word when it goes (listeners are called once). An AbortSignal is one; HTTP
 * requests use a lighter one (api/http/client-gone.ts).
 */
export interface ClientSignal {
  readonly aborted: boolean;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

export interface RequestContext {
  readonly signal?: ClientSignal;
  /** performance.now() after which the request must not go on the wire. */
  readonly deadline?: number;
  /**
   * Told, before a write's promise settles, when it went on the wire and when
   * the slave's answer arrived: the slave switched in between. The control
   * layer times a cover's motor from the middle of the two, on and off alike.
   */
  readonly onAnswered?: (sentAt: number, answeredAt: number) => void;
}

const storage = new AsyncLocalStorage<RequestContext>();

export function withRequestContext<T>(context: RequestContext, run: () => Promise<T>): Promise<T> {
  return storage.run(context, run);
}

export function currentRequestContext(): RequestContext | undefined {
  return storage.getStore();
}
