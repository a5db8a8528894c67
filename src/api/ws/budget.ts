import type { RawData } from 'ws';

// What one WebSocket client may cost the daemon. A client is served while it
// reads what it is sent; one that sends commands and never reads, or floods
// messages that fail, must not grow the daemon's memory or hold the event
// loop, and after a while it is shown the door.
//
// - Commands wait in a queue bounded in count and bytes. While more than
//   REPLY_BACKLOG_BYTES are waiting to go out to the client, no command runs
//   and the socket is not read: the rest waits in TCP, on the client's side.
//   Meanwhile a command identical to the one queued just before it is
//   dropped (its reply would be the same, or the same write done twice): a
//   client that does not read its replies cannot count them either. A client that
//   still overflows the queue is closed with 1008.
// - At most COMMANDS_PER_TURN commands run before the client yields the event
//   loop (setImmediate), so HTTP requests and other clients are served in
//   between however many commands one client has sent.
// - All clients together get COMMAND_MS_PER_TURN of command work per turn
//   (the synchronous part of each command: parsing, building `all`, sending),
//   so sixty clients each within their own budget cannot add up to a turn
//   that holds HTTP for seconds. A client that finds the turn's budget spent
//   waits for the next turn, in line behind the others that did.
// - All clients together get REPLY_BYTES_PER_SECOND of command replies (after
//   a burst of REPLY_BURST_BYTES). A turn's budget bounds how long HTTP waits
//   in one turn, not how much is sent: once `all` became cheap to answer,
//   clients that read and drop their replies drew hundreds of megabytes a
//   second from it, and the copying and reading of them took the machine's
//   CPU from everything else. A command that finds the bytes spent waits
//   until there are some again.
// - Messages that fail (bad JSON, unknown command, unknown circuit, …) draw
//   on a token bucket. Occasional garbage never empties it; a client that
//   keeps failing is slowed to the bucket's refill rate (its next message
//   waits for a token, its socket unread), and one that meanwhile keeps
//   piling up messages is closed with 1008.

export const WS_BUDGET = {
  /** Replies and pushes waiting in the socket for the client; above this, commands wait and reading stops. */
  REPLY_BACKLOG_BYTES: 256 * 1024,
  /** Commands received but not run yet. */
  MAX_QUEUED_COMMANDS: 512,
  MAX_QUEUED_BYTES: 512 * 1024,
  COMMANDS_PER_TURN: 16,
  /** Command work of all clients together in one event-loop turn (at least one command runs per turn). */
  COMMAND_MS_PER_TURN: 2,
  /** Command replies of all clients together, per second (about a 100 Mbit/s link's worth), and in a burst. */
  REPLY_BYTES_PER_SECOND: 8 * 1024 * 1024,
  REPLY_BURST_BYTES: 1024 * 1024,
  /** Failed messages allowed in a burst, and refilled per second. */
  INVALID_BURST: 64,
  INVALID_PER_SECOND: 64,
  /** Waits for a token with at least FLOOD_QUEUE messages behind it: then the client is flooding, not erring. */
  FLOOD_QUEUE: 8,
  INVALID_STRIKES: 64,
  /** A closing client that does not answer the close handshake is cut off after this. */
  CLOSE_GRACE_MS: 1000,
} as const;

/** RFC 6455 "policy violation". */
export const CLOSE_POLICY = 1008;

function sizeOf(data: RawData): number {
  if (Array.isArray(data)) return data.reduce((sum, part) => sum + part.length, 0);
  return data instanceof ArrayBuffer ? data.byteLength : data.length;
}

function sameFrame(a: RawData, b: RawData): boolean {
  if (!Buffer.isBuffer(a) || !Buffer.isBuffer(b)) return false;
  return a.length === b.length && a.equals(b);
}

export type Enqueued = 'queued' | 'coalesced' | 'overflow';

/** Frames waiting to be run, bounded in count and bytes. */
export class CommandQueue {
  private readonly frames: Array<[RawData, boolean]> = [];
  private head = 0;
  private bytes = 0;

  get length(): number {
    return this.frames.length - this.head;
  }

  /** `coalesce`: drop the frame when it repeats the last one queued (the client is behind on its replies). */
  push(data: RawData, isBinary: boolean, coalesce: boolean): Enqueued {
    const last = coalesce && this.length > 0 ? this.frames[this.frames.length - 1]! : undefined;
    if (last && last[1] === isBinary && sameFrame(last[0], data)) return 'coalesced';
    const size = sizeOf(data);
    if (this.length >= WS_BUDGET.MAX_QUEUED_COMMANDS || this.bytes + size > WS_BUDGET.MAX_QUEUED_BYTES) return 'overflow';
    this.frames.push([data, isBinary]);
    this.bytes += size;
    return 'queued';
  }

  shift(): [RawData, boolean] | undefined {
    if (this.head >= this.frames.length) return undefined;
    const next = this.frames[this.head]!;
    this.frames[this.head++] = undefined as never;
    this.bytes -= sizeOf(next[0]);
    // Compact once the consumed prefix dominates, so shifting stays O(1) amortised.
    if (this.head > 64 && this.head * 2 > this.frames.length) {
      this.frames.splice(0, this.head);
      this.head = 0;
    }
    return next;
  }

  clear(): void {
    this.frames.length = 0;
    this.head = 0;
    this.bytes = 0;
  }
}

export type InvalidVerdict = 'allowed' | 'wait' | 'close';

/** Token bucket for failed messages: cheap to ask, fair to a client that errs now and then. */
export class InvalidMessageLimiter {
  private tokens: number = WS_BUDGET.INVALID_BURST;
  private refilledAt: number;
  private strikes = 0;

  /** `now`: the monotonic clock, so a step of the wall clock neither refills nor starves the bucket. */
  constructor(private readonly now: () => number = () => performance.now()) {
    this.refilledAt = now();
  }

  private refill(): void {
    const now = this.now();
    const gained = ((now - this.refilledAt) / 1000) * WS_BUDGET.INVALID_PER_SECOND;
    if (gained <= 0) return;
    this.tokens = Math.min(WS_BUDGET.INVALID_BURST, this.tokens + gained);
    this.refilledAt = now;
  }

  /**
   * Whether the next message may run now; `wait` means after waitMs(). A
   * client that has `queued` messages behind it while it waits is flooding,
   * and is told to go after INVALID_STRIKES such waits.
   */
  admit(queued: number): InvalidVerdict {
    this.refill();
    if (this.tokens >= 1) {
      if (this.tokens >= WS_BUDGET.INVALID_BURST) this.strikes = 0;
      return 'allowed';
    }
    if (queued >= WS_BUDGET.FLOOD_QUEUE && ++this.strikes >= WS_BUDGET.INVALID_STRIKES) return 'close';
    return 'wait';
  }

  /** Time until the bucket holds a whole token again. */
  waitMs(): number {
    return Math.max(1, Math.ceil(((1 - this.tokens) * 1000) / WS_BUDGET.INVALID_PER_SECOND));
  }

  /** A message failed: it costs one token. */
  failed(): void {
    this.tokens = Math.max(0, this.tokens - 1);
  }
}

/** The command work of all WebSocket clients in the current event-loop turn, and their reply bytes per second. */
export class SharedTurnBudget {
  private spentMs = 0;
  private turnEnding = false;
  private waiters: Array<() => void> = [];
  private replyBytes: number;
  private refilledAt: number;
  private bytesWaiters: Array<() => void> = [];
  private bytesTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly msPerTurn: number = WS_BUDGET.COMMAND_MS_PER_TURN,
    private readonly now: () => number = () => performance.now(),
    private readonly replyBytesPerSecond: number = WS_BUDGET.REPLY_BYTES_PER_SECOND,
    private readonly replyBurstBytes: number = WS_BUDGET.REPLY_BURST_BYTES,
  ) {
    this.replyBytes = replyBurstBytes;
    this.refilledAt = now();
  }

  /** Bytes of a command's reply, drawn from the shared rate (it may go below zero: the next command waits longer). */
  replied(bytes: number): void {
    this.replyBytes -= bytes;
  }

  /** Runs `command`'s synchronous part against the budget; resolves with its promise once it may start. */
  async run<T>(command: () => Promise<T>): Promise<T> {
    for (;;) {
      if (this.spentMs >= this.msPerTurn) {
        await new Promise<void>((resolve) => this.waiters.push(resolve));
        continue;
      }
      this.refill();
      if (this.replyBytes <= 0) {
        await new Promise<void>((resolve) => this.waitForBytes(resolve));
        continue;
      }
      break;
    }
    this.startTurn();
    const started = this.now();
    const done = command();
    this.spentMs += this.now() - started;
    return done;
  }

  private refill(): void {
    const now = this.now();
    this.replyBytes = Math.min(this.replyBurstBytes, this.replyBytes + ((now - this.refilledAt) * this.replyBytesPerSecond) / 1000);
    this.refilledAt = now;
  }

  /** One timer for everyone waiting for reply bytes; they go on in the order they came. */
  private waitForBytes(wake: () => void): void {
    this.bytesWaiters.push(wake);
    if (this.bytesTimer) return;
    const ms = Math.max(1, Math.ceil((-this.replyBytes * 1000) / this.replyBytesPerSecond));
    this.bytesTimer = setTimeout(() => {
      this.bytesTimer = undefined;
      const waiting = this.bytesWaiters;
      this.bytesWaiters = [];
      for (const next of waiting) next();
    }, ms);
  }

  /** The first command of a turn schedules the turn's end, which resets the budget and wakes the waiting, oldest first. */
  private startTurn(): void {
    if (this.turnEnding) return;
    this.turnEnding = true;
    setImmediate(() => {
      this.turnEnding = false;
      this.spentMs = 0;
      const waiting = this.waiters;
      this.waiters = [];
      for (const wake of waiting) wake();
    });
  }
}

/** Shared by every WebSocket client of the process. */
export const commandTurns = new SharedTurnBudget();

/** Yields the event loop so sockets, timers and other clients get their turn. */
export function yieldTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
