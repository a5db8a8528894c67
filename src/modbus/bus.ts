import { LinkUnavailable, type Link } from '../transport/link.js';
import { rtuFraming, tcpFraming, type FrameReply, type MasterFraming } from './framing.js';
import { decodeResponse, encodeRequest, exceptionName, type ModbusRequest, type ModbusResponse } from './pdu.js';
import { ModbusError } from './errors.js';

// One Modbus line and the only place where its time is spent. Exactly one
// transaction is on the wire at a time. Writes queue ahead of polls, but never
// go twice in a row while a poll waits: a steady stream of writes (a client
// posting in a loop) would otherwise hold every poll back and stall the scans.
// So a write waits at most for the transaction in flight and one poll, and the
// polls keep at least half of the line. A line that is down
// fails requests at once instead of holding them (EVOK#190 replayed a backlog
// of stale writes after a reconnect).

export type Priority = 'write' | 'poll';

export interface BusOptions {
  name: string;
  timeoutMs: number;
  retries: number;
  /** First reconnect delay; doubles up to maxReconnectMs. */
  reconnectMs?: number;
  maxReconnectMs?: number;
  log?: (level: 'info' | 'warn' | 'error', message: string) => void;
}

/** What happened on the wire for one unit id (or, summed, for the whole bus). */
export interface TransactionCounters {
  requests: number;
  responses: number;
  timeouts: number;
  retries: number;
  exceptions: number;
  corruptFrames: number;
}

export interface BusStats extends TransactionCounters {
  reconnects: number;
  connected: boolean;
}

function zeroCounters(): TransactionCounters {
  return { requests: 0, responses: 0, timeouts: 0, retries: 0, exceptions: 0, corruptFrames: 0 };
}

interface Job {
  unit: number;
  request: ModbusRequest;
  pdu: Buffer;
  attemptsLeft: number;
  queue: Job[];
  resolve(response: ModbusResponse): void;
  reject(error: ModbusError): void;
}

export class ModbusBus {
  private readonly framing: MasterFraming;
  private readonly writes: Job[] = [];
  private readonly polls: Job[] = [];
  private current: { job: Job; key: number; timer: NodeJS.Timeout; corruptBefore: number } | undefined;
  /** Whether the transaction sent last was a write; the next waiting poll then goes first. */
  private lastSentWrite = false;
  private connected = false;
  private stopped = false;
  private lastFrameAt = 0;
  private gapTimer: NodeJS.Timeout | undefined;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private reconnectDelay: number;
  private readonly counters = { requests: 0, responses: 0, timeouts: 0, retries: 0, exceptions: 0, reconnects: 0 };
  private readonly unitCounters = new Map<number, TransactionCounters>();
  private readonly connectWaiters: Array<() => void> = [];

  constructor(
    readonly link: Link,
    private readonly options: BusOptions,
  ) {
    const onReply = (reply: FrameReply) => this.onReply(reply);
    this.framing = link.framing === 'TCP' ? tcpFraming(onReply) : rtuFraming(onReply);
    this.reconnectDelay = options.reconnectMs ?? 100;
  }

  get name(): string {
    return this.options.name;
  }

  get isConnected(): boolean {
    return this.connected;
  }

  stats(): BusStats {
    return { ...this.counters, corruptFrames: this.framing.corruptFrames(), connected: this.connected };
  }

  /** Counters of one unit id; corrupt frames are those seen while its transaction was on the wire. */
  unitStats(unit: number): TransactionCounters {
    return { ...(this.unitCounters.get(unit) ?? zeroCounters()) };
  }

  private countersOf(unit: number): TransactionCounters {
    let counters = this.unitCounters.get(unit);
    if (!counters) this.unitCounters.set(unit, (counters = zeroCounters()));
    return counters;
  }

  start(): void {
    this.stopped = false;
    void this.connect();
  }

  /** Resolves once the link is up (used at start-up so the first scan is not wasted). */
  whenConnected(): Promise<void> {
    if (this.connected) return Promise.resolve();
    return new Promise((resolve) => this.connectWaiters.push(resolve));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.reconnectTimer);
    clearTimeout(this.gapTimer);
    this.failAll(new ModbusError('disconnected', `bus ${this.name} is shutting down`));
    this.connected = false;
    await this.link.close();
  }

  /**
   * `retries` overrides the bus setting for this request: probing a slave
   * already known to be offline should cost the line one timeout, not several.
   */
  request(unit: number, request: ModbusRequest, priority: Priority, retries = this.options.retries): Promise<ModbusResponse> {
    if (!this.connected) {
      return Promise.reject(new ModbusError('disconnected', `bus ${this.name} (${this.link.spec}) is not connected`));
    }
    let pdu: Buffer;
    try {
      pdu = encodeRequest(request);
    } catch (error) {
      return Promise.reject(new ModbusError('invalid', (error as Error).message));
    }
    return new Promise((resolve, reject) => {
      const queue = priority === 'write' ? this.writes : this.polls;
      queue.push({ unit, request, pdu, attemptsLeft: 1 + retries, queue, resolve, reject });
      this.pump();
    });
  }

  /** Polls still waiting for the line; the scheduler uses it to avoid piling up scans. */
  get queuedPolls(): number {
    return this.polls.length;
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
      this.scheduleReconnect(`open failed: ${(error as Error).message}`);
      return;
    }
    if (this.stopped) return;
    this.connected = true;
    this.reconnectDelay = this.options.reconnectMs ?? 100;
    this.framing.reset();
    for (const waiter of this.connectWaiters.splice(0)) waiter();
    this.pump();
  }

  private onClosed(reason: string): void {
    if (!this.connected) return;
    this.connected = false;
    this.failAll(new ModbusError('disconnected', `bus ${this.name} (${this.link.spec}) lost: ${reason}`));
    this.scheduleReconnect(reason);
  }

  private scheduleReconnect(reason: string): void {
    if (this.stopped) return;
    this.counters.reconnects++;
    this.options.log?.('warn', `bus ${this.name}: ${reason}; reconnecting in ${this.reconnectDelay} ms`);
    clearTimeout(this.reconnectTimer);
    this.reconnectTimer = setTimeout(() => void this.connect(), this.reconnectDelay);
    this.reconnectDelay = Math.min(this.reconnectDelay * 2, this.options.maxReconnectMs ?? 10_000);
  }

  private failAll(error: ModbusError): void {
    if (this.current) {
      clearTimeout(this.current.timer);
      const { job } = this.current;
      this.current = undefined;
      job.reject(error);
    }
    for (const job of this.writes.splice(0)) job.reject(error);
    for (const job of this.polls.splice(0)) job.reject(error);
  }

  private pump(): void {
    if (this.current || !this.connected || this.gapTimer) return;
    const pollsTurn = this.lastSentWrite && this.polls.length > 0;
    const job = (pollsTurn ? this.polls.shift() : this.writes.shift()) ?? this.polls.shift();
    if (!job) return;
    const wait = this.lastFrameAt + this.link.silenceMs - performance.now();
    if (wait > 0) {
      // RTU needs t3.5 of silence before the next frame; hold the line until then.
      job.queue.unshift(job);
      this.gapTimer = setTimeout(() => {
        this.gapTimer = undefined;
        this.pump();
      }, wait);
      return;
    }
    this.send(job);
  }

  private send(job: Job): void {
    const { frame, key } = this.framing.encode(job.unit, job.pdu);
    const timer = setTimeout(() => this.onTimeout(), this.options.timeoutMs);
    this.current = { job, key, timer, corruptBefore: this.framing.corruptFrames() };
    this.lastSentWrite = job.queue === this.writes;
    this.counters.requests++;
    this.countersOf(job.unit).requests++;
    this.link.write(frame);
  }

  private onData(chunk: Buffer): void {
    this.lastFrameAt = performance.now();
    // On a serial line nothing may answer while no request is out: these are
    // the tail of a reply that already timed out, or noise. Feeding them to
    // the framer would only glue them to the front of the next reply.
    if (!this.current && this.link.framing === 'RTU') {
      this.framing.reset();
      return;
    }
    this.framing.push(chunk);
  }

  /** Charge corrupt frames seen during the finished transaction to its unit. */
  private settleCorruptFrames(current: { job: Job; corruptBefore: number }): void {
    this.countersOf(current.job.unit).corruptFrames += this.framing.corruptFrames() - current.corruptBefore;
  }

  private onReply(reply: FrameReply): void {
    const current = this.current;
    // A late reply to a request that already timed out, or noise from another
    // master: not ours, drop it.
    if (!current || reply.key !== current.key || reply.unit !== current.job.unit) return;
    clearTimeout(current.timer);
    this.current = undefined;
    this.lastFrameAt = performance.now();
    this.settleCorruptFrames(current);
    const { job } = current;
    const unitCounters = this.countersOf(job.unit);
    let response: ModbusResponse;
    try {
      response = decodeResponse(reply.pdu, job.request);
    } catch (error) {
      this.retryOrFail(job, new ModbusError('protocol', `slave ${job.unit}: ${(error as Error).message}`));
      return;
    }
    this.counters.responses++;
    unitCounters.responses++;
    if ('exception' in response) {
      this.counters.exceptions++;
      unitCounters.exceptions++;
      job.reject(
        new ModbusError(
          'exception',
          `slave ${job.unit} answered function ${job.request.fc} with exception ${response.exception} (${exceptionName(response.exception)})`,
          response.exception,
        ),
      );
    } else {
      job.resolve(response);
    }
    this.pump();
  }

  private onTimeout(): void {
    const current = this.current;
    if (!current) return;
    this.current = undefined;
    this.counters.timeouts++;
    this.countersOf(current.job.unit).timeouts++;
    this.settleCorruptFrames(current);
    this.framing.reset();
    this.lastFrameAt = performance.now();
    this.retryOrFail(
      current.job,
      new ModbusError('timeout', `slave ${current.job.unit} did not answer within ${this.options.timeoutMs} ms`),
    );
  }

  private retryOrFail(job: Job, error: ModbusError): void {
    job.attemptsLeft--;
    if (job.attemptsLeft > 0 && this.connected) {
      this.counters.retries++;
      this.countersOf(job.unit).retries++;
      job.queue.unshift(job);
    } else {
      job.reject(error);
    }
    this.pump();
  }
}
