import type { ModbusError } from './errors.js';
import type { ModbusRequest, ModbusResponse } from './pdu.js';
import type { ClientSignal } from './request-context.js';

// The requests waiting for one Modbus line, and which of them goes next. The
// bus sends one transaction at a time; this decides the order. Writes queue
// ahead of polls, but never go twice in a row while a poll waits: a steady
// stream of writes (a client posting in a loop) would otherwise hold every
// poll back and stall the scans. The same holds per slave: after a write to a
// slave, its next write waits until that slave's waiting poll has gone.
// Writes to different slaves take turns, so a batch aimed at one slave cannot
// hold the line beyond its share.
// Polls share the line by time, not by turns (start-time fair queuing): a
// slave whose requests end in timeouts is charged the time they took, so
// when the line is full it waits while its neighbours, whose transactions
// are short, keep their rate.
// Input reads (`input_scan_frequency`) are polls that go ahead of the other
// polls and of writes: each is queued only when due, at most one per slave at
// a time, and as ordinary polls they waited behind every other slave's
// queued poll (on RS485 several ms each; the fair queuing even ranks the
// slave with fast inputs last, having charged it for their line time). They
// never go twice in a row while anything else waits, so
// however fast they are asked for, scans and writes keep at least every
// other turn on the line. Their line time is charged to their slave like a
// poll's.

/** `input`: a poll of digital input values that goes ahead of the others (see above). */
export type Priority = 'write' | 'poll' | 'input';

/** One request from its queueing to its outcome, across its attempts. */
export interface Job {
  unit: number;
  request: ModbusRequest;
  pdu: Buffer;
  attemptsLeft: number;
  priority: Priority;
  deadline: number;
  signal: ClientSignal | undefined;
  /** Whether an attempt went on the wire: from then on its outcome is unknown until answered. */
  sent: boolean;
  /** Fair-queuing start tag (polls): the line time its unit had used when it was queued. */
  start: number;
  sentAt: number;
  onAnswered: ((sentAt: number, answeredAt: number) => void) | undefined;
  settled: boolean;
  onAbort: (() => void) | undefined;
  resolve(response: ModbusResponse): void;
  reject(error: ModbusError): void;
}

export class JobQueues {
  readonly writes: Job[] = [];
  readonly polls: Job[] = [];
  /** Whether the transaction sent last was a write; the next waiting poll then goes first. */
  private lastSentWrite = false;
  /** Whether the transaction sent last was an input read; anything else waiting then goes first. */
  private lastSentInput = false;
  /** Unit of the write sent last, so writes to different slaves take turns. */
  private lastWriteUnit = -1;
  /** Units that got a write while one of their polls waited: their next write waits for that poll. */
  private readonly pollOwed = new Set<number>();
  /** Fair-queuing clock: the start tag of the poll sent last. */
  private virtualTime = 0;
  /** Per unit: the virtual time at which the line time it has used ends. */
  private readonly unitFinish = new Map<number, number>();

  /** The queue a job of this priority waits in (input reads wait among the polls). */
  queueFor(priority: Priority): Job[] {
    return priority === 'write' ? this.writes : this.polls;
  }

  /** A new job joins the end of its queue. */
  add(job: Job): void {
    this.tag(job);
    this.queueFor(job.priority).push(job);
  }

  /** A job taken but not sent (the line is held) goes back to the head of its queue. */
  putBack(job: Job): void {
    this.queueFor(job.priority).unshift(job);
  }

  /** Another attempt of a job goes first in its queue. */
  retry(job: Job): void {
    // A retried poll queues behind the line time its failed attempt took.
    this.tag(job);
    this.queueFor(job.priority).unshift(job);
  }

  /** Takes a job out of its queue; false if it was not waiting there. */
  remove(job: Job): boolean {
    const queue = this.queueFor(job.priority);
    const index = queue.indexOf(job);
    if (index < 0) return false;
    queue.splice(index, 1);
    return true;
  }

  /**
   * Drops each waiting job whose deadline is past (writes first), telling
   * `drop`; returns the earliest deadline still waiting, or Infinity.
   */
  removeExpired(now: number, drop: (job: Job) => void): number {
    let next = Infinity;
    for (const queue of [this.writes, this.polls]) {
      for (let i = 0; i < queue.length; ) {
        const job = queue[i]!;
        if (job.deadline <= now) {
          queue.splice(i, 1);
          drop(job);
        } else {
          next = Math.min(next, job.deadline);
          i++;
        }
      }
    }
    return next;
  }

  /**
   * The job to send next, skipping (and leaving to `stillWanted` to end)
   * those whose deadline or client has gone.
   */
  next(stillWanted: (job: Job) => boolean): Job | undefined {
    for (;;) {
      const pollsTurn = this.lastSentWrite && this.polls.length > 0;
      const job =
        (this.inputsTurn() ? this.nextInput() : undefined) ??
        (pollsTurn ? this.nextPoll() : this.nextWrite()) ??
        this.nextPoll() ??
        this.nextWrite() ??
        this.nextInput();
      if (!job || stillWanted(job)) return job;
    }
  }

  /** A job went on the wire: whose turn comes next depends on it. */
  sent(job: Job): void {
    // Input reads jump the queue: they are charged their line time but do not move the fair-queuing clock.
    if (job.priority === 'poll') this.virtualTime = Math.max(this.virtualTime, job.start);
    // An input read in between does not give writes another turn ahead of a waiting poll.
    if (job.priority !== 'input') this.lastSentWrite = job.priority === 'write';
    this.lastSentInput = job.priority === 'input';
    if (job.priority === 'write') {
      this.lastWriteUnit = job.unit;
      if (this.polls.some((poll) => poll.unit === job.unit)) this.pollOwed.add(job.unit);
    } else {
      this.pollOwed.delete(job.unit);
    }
  }

  /** Charge a finished attempt's line time to its unit. */
  charge(job: Job): void {
    this.unitFinish.set(job.unit, job.start + (performance.now() - job.sentAt));
  }

  /** A job's fair-queuing start tag: not before now (virtual), not before its unit's used time ends. */
  private tag(job: Job): void {
    job.start = Math.max(this.virtualTime, this.unitFinish.get(job.unit) ?? 0);
  }

  /** The next write to send: not to a slave that owes a poll, and another slave's than last time if one waits. */
  private nextWrite(): Job | undefined {
    let fallback = -1;
    for (let i = 0; i < this.writes.length; i++) {
      const job = this.writes[i]!;
      if (this.pollOwed.has(job.unit) && this.polls.some((poll) => poll.unit === job.unit)) continue;
      if (job.unit !== this.lastWriteUnit) return this.writes.splice(i, 1)[0];
      if (fallback < 0) fallback = i;
    }
    return fallback >= 0 ? this.writes.splice(fallback, 1)[0] : undefined;
  }

  /** The waiting poll other than an input read with the earliest start tag (the first queued among equals). */
  private nextPoll(): Job | undefined {
    let best = -1;
    for (let i = 0; i < this.polls.length; i++) {
      const job = this.polls[i]!;
      if (job.priority !== 'input' && (best < 0 || job.start < this.polls[best]!.start)) best = i;
    }
    return best < 0 ? undefined : this.polls.splice(best, 1)[0];
  }

  /** The input read queued first, if one waits. */
  private nextInput(): Job | undefined {
    const index = this.polls.findIndex((job) => job.priority === 'input');
    return index < 0 ? undefined : this.polls.splice(index, 1)[0];
  }

  /** An input read may go now: one waits, and the last transaction was not one or nothing else waits. */
  private inputsTurn(): boolean {
    if (!this.lastSentInput) return true;
    return this.writes.length === 0 && this.polls.every((job) => job.priority === 'input');
  }
}
