import type { BoardModel } from '../../src/boards/model.js';
import { EXCEPTION } from '../../src/modbus/pdu.js';
import { encodeRtu } from '../../src/modbus/rtu-framer.js';
import { rtuResponder } from '../../src/sim/rtu-responder.js';
import { SimulatedBoard } from '../../src/sim/simulated-board.js';
import type { Link, LinkHandlers } from '../../src/transport/link.js';

// An in-memory RTU line to simulated boards with faults on demand: silent
// units, units that lose a share of their replies (a marginal RS485 line,
// seeded so runs repeat) or answer late, replies rewritten on their way back
// (corrupted, split, glued to noise), exception replies, refused opens and a
// line that drops away.
// Bytes cross on later turns of the event loop, as on a real wire.

/** Turns one reply frame into the chunks the master receives. */
export type ReplyFault = (frame: Buffer) => Buffer[];

export class FaultyLine implements Link {
  readonly framing = 'RTU' as const;
  readonly silenceMs = 0;
  readonly spec = 'faulty-line';
  readonly boards = new Map<number, SimulatedBoard>();
  /** Units that hear requests but never answer. */
  readonly silent = new Set<number>();
  /** Rewrites reply frames; consumed one per reply while it has entries, then replies pass intact. */
  readonly replyFaults: ReplyFault[] = [];
  /** Function codes answered with SLAVE_DEVICE_FAILURE instead of being served. */
  readonly failingFunctions = new Set<number>();
  /** While true, open() rejects as if the port did not exist. */
  refuseOpen = false;
  opens = 0;
  /** Requests heard per unit, answered or not. */
  readonly heard = new Map<number, number>();
  /** Write requests (function codes 5, 6, 15, 16) heard per unit. */
  readonly heardWrites = new Map<number, number>();
  /** Share (0..1) of each unit's replies that are lost. */
  readonly lossy = new Map<number, number>();
  /** Each unit's replies leave this many ms after its request arrived. */
  readonly replyDelayMs = new Map<number, number>();
  /** Units whose replies carry another unit id (with a valid CRC): a misconfigured or confused slave. */
  readonly wrongUnit = new Map<number, number>();
  /** Seeded generator for the losses, so a run can be repeated. */
  private random = seededRandom(15);
  private handlers: LinkHandlers | undefined;
  private readonly respond: (chunk: Buffer) => void;

  constructor(slaves: ReadonlyArray<{ unit: number; model: BoardModel }>) {
    for (const { unit, model } of slaves) this.boards.set(unit, new SimulatedBoard(model));
    this.respond = rtuResponder(this.boards, (frame) => this.reply(frame));
  }

  async open(handlers: LinkHandlers): Promise<void> {
    if (this.refuseOpen) throw new Error('No such file or directory');
    this.opens++;
    this.handlers = handlers;
  }

  write(frame: Buffer): void {
    const copy = Buffer.from(frame);
    setImmediate(() => {
      const unit = copy[0]!;
      this.heard.set(unit, (this.heard.get(unit) ?? 0) + 1);
      if (WRITE_FUNCTIONS.has(copy[1]!)) this.heardWrites.set(unit, (this.heardWrites.get(unit) ?? 0) + 1);
      if (this.silent.has(unit)) return;
      if (this.failingFunctions.has(copy[1]!)) {
        this.reply(encodeRtu(unit, Buffer.from([copy[1]! | 0x80, EXCEPTION.SLAVE_DEVICE_FAILURE])));
        return;
      }
      this.respond(copy);
    });
  }

  async close(): Promise<void> {
    this.handlers = undefined;
  }

  /** The port vanishes under the master (USB adapter pulled). */
  vanish(): void {
    const handlers = this.handlers;
    this.handlers = undefined;
    handlers?.closed('device vanished');
  }

  /** Put raw bytes on the line towards the master. */
  inject(chunk: Buffer): void {
    setImmediate(() => this.handlers?.data(chunk));
  }

  /** Restart the loss generator. */
  seed(value: number): void {
    this.random = seededRandom(value);
  }

  private reply(frame: Buffer): void {
    const unit = frame[0]!;
    const claimed = this.wrongUnit.get(unit);
    if (claimed !== undefined) frame = encodeRtu(claimed, frame.subarray(1, frame.length - 2));
    const loss = this.lossy.get(unit);
    if (loss !== undefined && this.random() < loss) return;
    const delay = this.replyDelayMs.get(unit);
    if (delay) {
      setTimeout(() => this.deliverReply(frame), delay);
      return;
    }
    this.deliverReply(frame);
  }

  private deliverReply(frame: Buffer): void {
    const fault = this.replyFaults.shift();
    const chunks = fault ? fault(frame) : [frame];
    // Each chunk on its own turn, like bytes trickling in from a UART.
    const deliver = (index: number) => {
      if (index >= chunks.length) return;
      setImmediate(() => {
        this.handlers?.data(chunks[index]!);
        deliver(index + 1);
      });
    };
    deliver(0);
  }
}

const WRITE_FUNCTIONS = new Set([5, 6, 15, 16]);

/** mulberry32: a small seeded generator of numbers in [0, 1). */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
