import type { Link, LinkHandlers } from './link.js';

// Two ends of an in-memory wire. Bytes written on one end arrive on the other
// asynchronously, after the writer's own code has run (as on a real line), so
// the framers and timeouts on both sides work as against hardware. Delivery is
// a microtask, not an event-loop turn: a transaction costs no I/O round, and
// since every transaction is started by a request or a scan slot, the chain
// always ends and HTTP clients are never starved.

export interface WireEnd {
  onData(handler: (chunk: Buffer) => void): void;
  write(chunk: Buffer): void;
}

export class MemoryLink implements Link {
  readonly framing = 'RTU' as const;
  readonly silenceMs = 0;
  private handlers: LinkHandlers | undefined;
  private readonly slaveHandlers: Array<(chunk: Buffer) => void> = [];

  constructor(readonly spec: string) {}

  /** The simulator's end of the wire. */
  readonly slaveEnd: WireEnd = {
    onData: (handler) => {
      this.slaveHandlers.push(handler);
    },
    write: (chunk) => {
      const copy = Buffer.from(chunk);
      queueMicrotask(() => this.handlers?.data(copy));
    },
  };

  async open(handlers: LinkHandlers): Promise<void> {
    this.handlers = handlers;
  }

  write(frame: Buffer): void {
    const copy = Buffer.from(frame);
    queueMicrotask(() => {
      for (const handler of this.slaveHandlers) handler(copy);
    });
  }

  async close(): Promise<void> {
    this.handlers = undefined;
  }
}
