import { LinkUnavailable, type Link } from '../transport/link.js';
import { rtuFraming, tcpFraming, type FrameReply, type MasterFraming } from './framing.js';
import { decodeResponse, encodeRequest, exceptionName, type ModbusRequest, type ModbusResponse } from './pdu.js';
import { ModbusError } from './errors.js';
import { ReplyTimer } from './reply-timer.js';
import type { ClientSignal } from './request-context.js';
import { JobQueues, type Job, type Priority } from './job-queues.js';
import { LineHold } from './line-hold.js';
import { ReconnectBackoff } from './reconnect-backoff.js';

// One Modbus line and the only place where its time is spent. Exactly one
// transaction is on the wire at a time; which request goes next is the job
// queues' choice (job-queues.ts).
//
// Every request has a deadline across its queueing and retries, and may carry
// its client's abort signal: a request whose deadline passed or whose client
// left is dropped before it reaches the wire. A line that is down fails writes
// at once instead of holding them (EVOK#190 replayed a backlog of stale writes
// after a reconnect); polls queued when a link drops wait for the reconnect
// (within their deadline), and only the request that was on the wire is
// charged to its slave.
//
// A slave that answers after its timeout, or answers with another unit id,
// is told apart from one that does not answer, and at once: a reply from a
// unit that was sent a request lately and did not answer it in time,
// arriving while another request is out or none, is a late reply; on a
// serial line a well-formed reply to the request on the wire with the unit id
// of no unit asked lately is a misaddressed one, and that attempt fails then
// instead of waiting out its timeout. Its slave is told (observeFaults) and
// backs off. After each later timeout of a unit known to answer late, the
// line is held for as long as its replies were late (at most one timeout),
// so on RS485 its late reply does not collide with the next transaction.

export type { Priority } from './job-queues.js';

export interface BusOptions {
  name: string;
  timeoutMs: number;
  retries: number;
  /** Total time a request may take from queueing to its last attempt; default 4 × timeout × attempts, at least 1 s. */
  deadlineMs?: number;
  /** Requests that may wait for the line (writes and polls each); more are refused as busy. */
  maxQueued?: number;
  /** First reconnect delay; doubles up to maxReconnectMs. */
  reconnectMs?: number;
  maxReconnectMs?: number;
  log?: (level: 'info' | 'warn' | 'error', message: string) => void;
}

export interface RequestOptions {
  /** Extra attempts after a timeout or a corrupted reply; default the bus setting. */
  retries?: number;
  /** The client's signal: once aborted, a request not yet on the wire is dropped. */
  signal?: ClientSignal;
  /** performance.now() after which the request is not sent (the bus deadline applies too). */
  deadline?: number;
  /**
   * Told, before the request's promise settles, when its last attempt went
   * on the wire and when the slave's answer arrived (performance.now()): the
   * slave acted on a write between the two.
   */
  onAnswered?: (sentAt: number, answeredAt: number) => void;
}

/** What happened on the wire for one unit id (or, summed, for the whole bus). */
export interface TransactionCounters {
  requests: number;
  responses: number;
  timeouts: number;
  retries: number;
  exceptions: number;
  corruptFrames: number;
  /** Replies that came after their request had timed out. */
  lateReplies: number;
  /** Well-formed replies with another unit id than the request on the wire (serial lines). */
  misaddressedReplies: number;
}

export interface BusStats extends TransactionCounters {
  reconnects: number;
  connected: boolean;
  /** Requests dropped unsent: deadline passed, client gone, or queued too many. */
  dropped: number;
}

/** Told after every attempt on the wire whether the unit answered (an exception reply is an answer). */
export type AttemptObserver = (answered: boolean) => void;

/** A unit whose replies cannot be matched to its requests. */
export type ReplyFault = { kind: 'late'; lateMs: number } | { kind: 'misaddressed'; claimedUnit: number };
export type FaultObserver = (fault: ReplyFault) => void;

function zeroCounters(): TransactionCounters {
  return { requests: 0, responses: 0, timeouts: 0, retries: 0, exceptions: 0, corruptFrames: 0, lateReplies: 0, misaddressedReplies: 0 };
}

/** A reply still counts as late up to this many timeouts after its request was sent. */
const LATE_REPLY_WINDOW_FACTOR = 4;
/** Margin added to a late unit's observed lateness when the line is held after its timeouts. */
const LATE_HOLD_MARGIN_MS = 10;

const DEFAULT_MAX_QUEUED = 256;

/** Encoded PDUs of read requests, by request object; a PDU is never changed once made. */
const encodedReads = new WeakMap<ModbusRequest, Buffer>();

export class ModbusBus {
  private readonly framing: MasterFraming;
  private readonly queues = new JobQueues();
  private current: { job: Job; key: number; corruptBefore: number } | undefined;
  private readonly replyTimer: ReplyTimer;
  /** The RTU silence after a frame and the hold for a late unit's reply. */
  private readonly line: LineHold;
  private connected = false;
  private stopped = false;
  private expiryTimer: NodeJS.Timeout | undefined;
  private expiryAt = Infinity;
  /** When a line that is down is tried again, and what the log says of it. */
  private readonly reconnect: ReconnectBackoff;
  private readonly deadlineMs: number;
  private readonly maxQueued: number;
  private readonly counters = { requests: 0, responses: 0, timeouts: 0, retries: 0, exceptions: 0, reconnects: 0, dropped: 0, lateReplies: 0, misaddressedReplies: 0 };
  private readonly unitCounters = new Map<number, TransactionCounters>();
  private readonly observers = new Map<number, AttemptObserver>();
  private readonly faultObservers = new Map<number, FaultObserver>();
  private readonly dropObservers = new Set<() => void>();
  /** Per unit, its attempt sent last, and whether its own reply came: a reply to it may still come late. */
  private readonly lastAttempts = new Map<number, { key: number; sentAt: number; answered: boolean }>();
  /** Units seen answering late, with by how much (ms after the timeout). */
  private readonly lateUnits = new Map<number, number>();
  private readonly connectWaiters: Array<() => void> = [];
  /** performance.now() when the line was last lost. */
  private lostAt = 0;

  constructor(
    readonly link: Link,
    private readonly options: BusOptions,
  ) {
    const onReply = (reply: FrameReply) => this.onReply(reply);
    this.framing = link.framing === 'TCP' ? tcpFraming(onReply) : rtuFraming(onReply);
    this.reconnect = new ReconnectBackoff(options, link.spec, () => void this.connect());
    this.deadlineMs = options.deadlineMs ?? Math.max(1000, 4 * options.timeoutMs * (1 + options.retries));
    this.maxQueued = options.maxQueued ?? DEFAULT_MAX_QUEUED;
    this.replyTimer = new ReplyTimer(options.timeoutMs, () => this.onTimerFired());
    this.line = new LineHold(link, () => this.pump());
  }

  get name(): string {
    return this.options.name;
  }

  /** How long one attempt waits for its reply. */
  get timeoutMs(): number {
    return this.options.timeoutMs;
  }

  get isConnected(): boolean {
    return this.connected;
  }

  /** How long the line has been down, ms (0 while connected, and once the bus is stopped). */
  downForMs(): number {
    return this.connected || this.stopped ? 0 : performance.now() - this.lostAt;
  }

  /**
   * Told each time an open line drops. A slave must not wait for a scan to
   * learn it: its poll may sit in the queue until the reconnect or its
   * deadline, seconds later, while the line is known to be dead.
   */
  observeDrops(observer: () => void): void {
    this.dropObservers.add(observer);
  }

  stats(): BusStats {
    return { ...this.counters, corruptFrames: this.framing.corruptFrames(), connected: this.connected };
  }

  /** Counters of one unit id; corrupt frames are those seen while its transaction was on the wire. */
  unitStats(unit: number): TransactionCounters {
    return { ...(this.unitCounters.get(unit) ?? zeroCounters()) };
  }

  /** One observer per unit (its slave), told the outcome of each attempt. */
  observe(unit: number, observer: AttemptObserver): void {
    this.observers.set(unit, observer);
  }

  /** One observer per unit, told when its replies come late or with another unit id. */
  observeFaults(unit: number, observer: FaultObserver): void {
    this.faultObservers.set(unit, observer);
  }

  private countersOf(unit: number): TransactionCounters {
    let counters = this.unitCounters.get(unit);
    if (!counters) this.unitCounters.set(unit, (counters = zeroCounters()));
    return counters;
  }

  start(): void {
    this.stopped = false;
    this.lostAt = performance.now();
    void this.connect();
  }

  /** Resolves once the link is up (used at start-up so the first scan is not wasted). */
  whenConnected(): Promise<void> {
    if (this.connected) return Promise.resolve();
    return new Promise((resolve) => this.connectWaiters.push(resolve));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.reconnect.stop();
    this.line.clear();
    clearTimeout(this.expiryTimer);
    this.replyTimer.stop();
    const reason = 'iogate is shutting down';
    if (this.current) {
      const { job } = this.current;
      this.current = undefined;
      this.settle(job, this.lost(job, reason));
    }
    for (const job of [...this.queues.writes.splice(0), ...this.queues.polls.splice(0)]) this.settle(job, this.lost(job, reason));
    this.connected = false;
    await this.link.close();
  }

  /**
   * `retries` overrides the bus setting for this request: probing a slave
   * already known to be offline should cost the line one timeout, not several.
   */
  request(unit: number, request: ModbusRequest, priority: Priority, options: RequestOptions | number = {}): Promise<ModbusResponse> {
    const retries = typeof options === 'number' ? options : (options.retries ?? this.options.retries);
    const signal = typeof options === 'number' ? undefined : options.signal;
    const deadline = typeof options === 'number' ? undefined : options.deadline;
    const onAnswered = typeof options === 'number' ? undefined : options.onAnswered;
    if (!this.connected) {
      return Promise.reject(new ModbusError('disconnected', `bus ${this.name} (${this.link.spec}) is not connected; the request was not sent`));
    }
    if (signal?.aborted) {
      this.counters.dropped++;
      return Promise.reject(this.cancelled(unit));
    }
    const queue = this.queues.queueFor(priority);
    if (queue.length >= this.maxQueued) {
      this.counters.dropped++;
      return Promise.reject(new ModbusError('busy', `bus ${this.name}: ${queue.length} requests already wait for the line; the request was not sent`));
    }
    let pdu = encodedReads.get(request);
    if (!pdu) {
      try {
        pdu = encodeRequest(request);
      } catch (error) {
        return Promise.reject(new ModbusError('invalid', (error as Error).message));
      }
      // A scan sends the same read objects over and over (see ReadPlan): their bytes are made once.
      if (request.fc <= 4) encodedReads.set(request, pdu);
    }
    return new Promise((resolve, reject) => {
      const job: Job = {
        unit,
        request,
        pdu,
        attemptsLeft: 1 + retries,
        priority,
        deadline: Math.min(performance.now() + this.deadlineMs, deadline ?? Infinity),
        signal,
        sent: false,
        start: 0,
        sentAt: 0,
        onAnswered,
        settled: false,
        onAbort: undefined,
        resolve,
        reject,
      };
      if (signal) {
        // Only a job still waiting is dropped; one on the wire finishes (its reply keeps the cache true).
        job.onAbort = () => {
          if (this.queues.remove(job)) this.drop(job, this.cancelled(unit));
        };
        signal.addEventListener('abort', job.onAbort, { once: true });
      }
      this.queues.add(job);
      this.armExpiry(job.deadline);
      this.pump();
    });
  }

  /** Polls still waiting for the line; the scheduler uses it to avoid piling up scans. */
  get queuedPolls(): number {
    return this.queues.polls.length;
  }

  get queuedWrites(): number {
    return this.queues.writes.length;
  }

  private cancelled(unit: number): ModbusError {
    return new ModbusError('cancelled', `the client left before the request to slave ${unit} went on the wire; it was not sent`);
  }

  private settle(job: Job, outcome: ModbusError | ModbusResponse): void {
    if (job.settled) return;
    job.settled = true;
    if (job.onAbort) job.signal?.removeEventListener('abort', job.onAbort);
    if (outcome instanceof ModbusError) {
      job.reject(outcome);
      return;
    }
    job.onAnswered?.(job.sentAt, performance.now());
    job.resolve(outcome);
  }

  /** Fail a job that never reached the wire (or whose retry will not): counted as dropped. */
  private drop(job: Job, error: ModbusError): void {
    this.counters.dropped++;
    this.settle(job, error);
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    try {
      await this.link.open({
        data: (chunk) => this.onData(chunk),
        closed: (reason) => this.onClosed(reason),
      });
    } catch (error) {
      if (error instanceof LinkUnavailable) {
        // Retrying cannot help; one line, and the line stays down (requests fail at once).
        this.options.log?.('error', `bus ${this.name}: ${error.message}`);
        return;
      }
      this.scheduleReconnect(`cannot open ${this.link.spec}: ${(error as Error).message}`);
      return;
    }
    if (this.stopped) return;
    this.connected = true;
    this.reconnect.connected();
    this.framing.reset();
    for (const waiter of this.connectWaiters.splice(0)) waiter();
    this.pump();
  }

  private onClosed(reason: string): void {
    if (!this.connected) return;
    this.connected = false;
    this.lostAt = performance.now();
    this.line.clear();
    // The request on the wire is the only one whose fate the drop decides:
    // the slave may have acted on it. Writes still queued are refused (never
    // replayed later); queued polls wait for the reconnect, within their deadline.
    const current = this.current;
    if (current) {
      this.replyTimer.disarm();
      this.current = undefined;
      this.queues.charge(current.job);
      this.settleCorruptFrames(current);
      this.observers.get(current.job.unit)?.(false);
      this.settle(current.job, this.lost(current.job, reason));
    }
    for (const job of this.queues.writes.splice(0)) this.settle(job, this.lost(job, reason));
    this.scheduleReconnect(reason);
    for (const observer of this.dropObservers) observer();
  }

  private scheduleReconnect(reason: string): void {
    if (this.stopped) return;
    this.counters.reconnects++;
    this.reconnect.schedule(reason);
  }

  /**
   * Why a job ends with the line: unknown if any attempt of it went on the
   * wire (the slave may have acted on it), not sent otherwise.
   */
  private lost(job: Job, reason: string): ModbusError {
    const line = `bus ${this.name} (${this.link.spec})`;
    if (!job.sent) return new ModbusError('disconnected', `${line}: ${reason}; the request to slave ${job.unit} was not sent`);
    const outcome = job.priority === 'write' ? 'it may or may not have applied the write' : 'no reply came';
    return new ModbusError('unknown', `${line}: ${reason} before slave ${job.unit} answered; ${outcome}`);
  }

  /** Wake up at the earliest queued deadline, so a request waiting for the line fails on time. */
  private armExpiry(deadline: number): void {
    if (deadline >= this.expiryAt) return;
    clearTimeout(this.expiryTimer);
    this.expiryAt = deadline;
    this.expiryTimer = setTimeout(() => this.expire(), Math.max(0, deadline - performance.now()) + 1);
  }

  private expire(): void {
    this.expiryAt = Infinity;
    this.expiryTimer = undefined;
    const next = this.queues.removeExpired(performance.now(), (job) => this.drop(job, this.expired(job)));
    if (next < Infinity) this.armExpiry(next);
  }

  private expired(job: Job): ModbusError {
    if (job.sent) return this.noAnswer(job);
    return new ModbusError('expired', `the request to slave ${job.unit} waited past its deadline (${this.deadlineMs} ms at most) for bus ${this.name}; it was not sent`);
  }

  private noAnswer(job: Job): ModbusError {
    const tail = job.priority === 'write' ? '; it may or may not have applied the write' : '';
    return new ModbusError('timeout', `slave ${job.unit} did not answer within ${this.options.timeoutMs} ms${tail}`);
  }

  /** Whether a queued job may still go on the wire; drops it (and says no) if not. */
  private stillWanted(job: Job, now: number): boolean {
    if (job.signal?.aborted) {
      if (job.sent) this.settle(job, this.noAnswer(job));
      else this.drop(job, this.cancelled(job.unit));
      return false;
    }
    if (job.deadline <= now) {
      if (job.sent) this.settle(job, this.noAnswer(job));
      else this.drop(job, this.expired(job));
      return false;
    }
    return true;
  }

  private nextJob(): Job | undefined {
    const now = performance.now();
    return this.queues.next((job) => this.stillWanted(job, now));
  }

  private pump(): void {
    if (this.current || !this.connected || this.line.held) return;
    const job = this.nextJob();
    if (!job) return;
    const wait = this.line.waitMs();
    if (wait > 0) {
      // RTU needs t3.5 of silence before the next frame, and a late unit's reply may be on its way; hold the line until then.
      this.queues.putBack(job);
      this.line.hold(wait);
      return;
    }
    this.send(job);
  }

  private send(job: Job): void {
    const { frame, key } = this.framing.encode(job.unit, job.pdu);
    // Whatever the framer holds of stray bytes is not the start of this request's reply.
    if (this.link.framing === 'RTU') this.framing.reset();
    this.replyTimer.arm();
    this.current = { job, key, corruptBefore: this.framing.corruptFrames() };
    job.sent = true;
    job.sentAt = performance.now();
    this.lastAttempts.set(job.unit, { key, sentAt: job.sentAt, answered: false });
    this.queues.sent(job);
    this.counters.requests++;
    this.countersOf(job.unit).requests++;
    this.link.write(frame);
  }

  private onData(chunk: Buffer): void {
    this.line.frameEnded();
    // On a serial line nothing may answer while no request is out: these are
    // a reply that came after its timeout, or noise. They are framed all the
    // same, to recognise a late reply; send() drops what is left of them.
    this.framing.push(chunk);
  }

  /** Charge corrupt frames seen during the finished transaction to its unit. */
  private settleCorruptFrames(current: { job: Job; corruptBefore: number }): void {
    this.countersOf(current.job.unit).corruptFrames += this.framing.corruptFrames() - current.corruptBefore;
  }

  private onReply(reply: FrameReply): void {
    const current = this.current;
    // Not the reply to the request on the wire: a late reply, a misaddressed one, or noise.
    if (!current || reply.key !== current.key || reply.unit !== current.job.unit) {
      this.onStrayReply(reply, current);
      return;
    }
    this.replyTimer.disarm();
    this.current = undefined;
    this.line.frameEnded();
    this.settleCorruptFrames(current);
    const { job } = current;
    this.queues.charge(job);
    const unitCounters = this.countersOf(job.unit);
    let response: ModbusResponse;
    try {
      response = decodeResponse(reply.pdu, job.request);
    } catch (error) {
      this.observers.get(job.unit)?.(false);
      this.retryOrFail(job, new ModbusError('protocol', `slave ${job.unit}: ${(error as Error).message}`));
      return;
    }
    this.counters.responses++;
    unitCounters.responses++;
    const attempt = this.lastAttempts.get(job.unit);
    if (attempt) attempt.answered = true;
    // Answering in time again: its timeouts no longer hold the line.
    this.lateUnits.delete(job.unit);
    this.observers.get(job.unit)?.(true);
    if ('exception' in response) {
      this.counters.exceptions++;
      unitCounters.exceptions++;
      this.settle(
        job,
        new ModbusError(
          'exception',
          `slave ${job.unit} answered function ${job.request.fc} with exception ${response.exception} (${exceptionName(response.exception)})`,
          response.exception,
        ),
      );
    } else {
      this.settle(job, response);
    }
    this.pump();
  }

  /** A well-formed reply that does not answer the request on the wire. */
  private onStrayReply(reply: FrameReply, current: { job: Job; key: number; corruptBefore: number } | undefined): void {
    const now = performance.now();
    const serial = this.link.framing === 'RTU';
    const attempt = this.lastAttempts.get(reply.unit);
    if (attempt && now - attempt.sentAt <= LATE_REPLY_WINDOW_FACTOR * this.options.timeoutMs) {
      // A unit that was sent a request lately: its reply, late, not the current slave's. On TCP
      // its transaction id tells for sure. On a serial line a slave answers each request once, so
      // any reply of its outside its transaction is late, even when its last request seemed
      // answered: that answer may itself have been the late reply to the request before.
      if (!serial && (reply.key !== attempt.key || attempt.answered)) return;
      attempt.answered = true;
      const lateMs = Math.max(0, Math.round(now - attempt.sentAt - this.options.timeoutMs));
      this.lateUnits.set(reply.unit, Math.max(lateMs, this.lateUnits.get(reply.unit) ?? 0));
      this.counters.lateReplies++;
      this.countersOf(reply.unit).lateReplies++;
      // The reply the line was held for has come.
      this.line.lateReplyCame(reply.unit, now);
      this.faultObservers.get(reply.unit)?.({ kind: 'late', lateMs });
      if (!current) this.pump();
      return;
    }
    // A unit known to answer late, past the window: its reply still, never the current slave's.
    if (this.lateUnits.has(reply.unit)) return;
    if (!current || !serial || reply.unit === current.job.unit) return;
    // On a serial line only the addressed slave may answer: a well-formed reply
    // with another unit id is its reply, misaddressed. Waiting out the timeout would only cost the line.
    this.replyTimer.disarm();
    this.current = undefined;
    this.settleCorruptFrames(current);
    const { job } = current;
    this.queues.charge(job);
    this.counters.misaddressedReplies++;
    this.countersOf(job.unit).misaddressedReplies++;
    this.observers.get(job.unit)?.(false);
    this.faultObservers.get(job.unit)?.({ kind: 'misaddressed', claimedUnit: reply.unit });
    const tail = job.priority === 'write' ? '; it may or may not have applied the write' : '';
    this.retryOrFail(job, new ModbusError('protocol', `slave ${job.unit} answered with unit id ${reply.unit}${tail}`));
  }

  /**
   * The timer ran out, but a busy process runs expired timers before it looks
   * at sockets: a reply that arrived in time may be waiting to be read. It is
   * read first (setImmediate runs after the loop's I/O), so a stall of our own
   * is never taken for a slow or late slave.
   */
  private onTimerFired(): void {
    const current = this.current;
    setImmediate(() => {
      if (current && this.current === current) this.onTimeout();
    });
  }

  private onTimeout(): void {
    const current = this.current;
    if (!current) return;
    this.current = undefined;
    const { unit } = current.job;
    const now = performance.now();
    const lateMs = this.lateUnits.get(unit);
    if (lateMs !== undefined && this.link.framing === 'RTU') {
      // Its reply is likely on its way: let it pass before anyone else transmits.
      this.line.holdForLateReply(unit, now + Math.min(lateMs + LATE_HOLD_MARGIN_MS, this.options.timeoutMs));
    }
    this.queues.charge(current.job);
    this.counters.timeouts++;
    this.countersOf(current.job.unit).timeouts++;
    this.settleCorruptFrames(current);
    this.framing.reset();
    this.line.frameEnded();
    this.observers.get(current.job.unit)?.(false);
    this.retryOrFail(current.job, this.noAnswer(current.job));
  }

  /** Another attempt goes first in its queue, unless the bus is down or the job's deadline or client is gone. */
  private retryOrFail(job: Job, error: ModbusError): void {
    job.attemptsLeft--;
    const now = performance.now();
    if (job.attemptsLeft > 0 && this.connected && !job.signal?.aborted && job.deadline > now) {
      this.counters.retries++;
      this.countersOf(job.unit).retries++;
      this.queues.retry(job);
    } else {
      this.settle(job, error);
    }
    this.pump();
  }
}
