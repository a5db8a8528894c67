import type { Link, LinkHandlers } from './link.js';

// Two ends of an in-memory wire. Bytes written on one end arrive on the other
// asynchronously, after the writer's own code has run (as on a real line), so
// the framers and timeouts on both sides work as against hardware. Delivery is
// a microtask, not an event-loop turn: a transaction costs no I/O round, and
// since every transaction is started by a request or a scan slot, the chain
// always ends and HTTP clients are never starved. The microtask is a reaction
// to a settled promise, not queueMicrotask(), which makes an async resource
// and a bound function per call: two of them per poll of the built-in
// simulator were a visible part of its idle cost (bench/idle.mjs).

export interface WireEnd {
  onData(handler: (chunk: Buffer) => void): void;
  write(chunk: Buffer): void;
}

const settled = Promise.resolve();

/** Chunks written and not yet delivered, handed over in order by one microtask. */
class Delivery {
  private readonly chunks: Buffer[] = [];

  constructor(private readonly deliver: (chunk: Buffer) => void) {}

  push(chunk: Buffer): void {
    this.chunks.push(Buffer.from(chunk));
    if (this.chunks.length === 1) void settled.then(this.flush);
  }

  private readonly flush = (): void => {
    // Chunks a handler writes meanwhile go with the next microtask, in order.
    for (const chunk of this.chunks.splice(0)) this.deliver(chunk);
  };
}

export class MemoryLink implements Link {
  readonly framing = 'RTU' as const;
  readonly silenceMs = 0;
  private handlers: LinkHandlers | undefined;
  private readonly slaveHandlers: Array<(chunk: Buffer) => void> = [];

  constructor(readonly spec: string) {}

  private readonly toMaster = new Delivery((chunk) => this.handlers?.data(chunk));
  private readonly toSlaves = new Delivery((chunk) => {
    for (const handler of this.slaveHandlers) handler(chunk);
  });

  /** The simulator's end of the wire. */
  readonly slaveEnd: WireEnd = {
    onData: (handler) => {
      this.slaveHandlers.push(handler);
    },
    write: (chunk) => this.toMaster.push(chunk),
  };

  async open(handlers: LinkHandlers): Promise<void> {
    this.handlers = handlers;
  }

  write(frame: Buffer): void {
    this.toSlaves.push(frame);
  }

  async close(): Promise<void> {
    this.handlers = undefined;
  }
}
