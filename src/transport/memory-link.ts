import type { Link, LinkHandlers } from './link.js';

// Two ends of an in-memory wire. Bytes written on one end arrive on the other
// on a later turn of the event loop (as on a real line), so the framers and
// timeouts on both sides run as they would against hardware, and a busy bus can
// never starve HTTP clients of the event loop.

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
      setImmediate(() => this.handlers?.data(copy));
    },
  };

  async open(handlers: LinkHandlers): Promise<void> {
    this.handlers = handlers;
  }

  write(frame: Buffer): void {
    const copy = Buffer.from(frame);
    setImmediate(() => {
      for (const handler of this.slaveHandlers) handler(copy);
    });
  }

  async close(): Promise<void> {
    this.handlers = undefined;
  }
}
