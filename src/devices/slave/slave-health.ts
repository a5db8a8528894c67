import type { ModbusBus, ReplyFault } from '../../modbus/bus.js';
import { ModbusError } from '../../modbus/errors.js';
import { RepeatSummary } from '../../logging/repeat-summary.js';

// Whether one Modbus slave answers, and when an offline one is probed: its
// state (online, degraded, offline), taken from the outcome of each of its
// attempts, of each scan, of its line and of the replies that cannot be
// matched to it. The scan (slave-unit.ts) asks it whether a scan is due and
// tells it how each went; it tells the scan's owner when the state changed.
// Every time here is performance.now(): a step of the wall clock must not hold
// an offline slave offline for as long as the step.

export type SlaveState = 'starting' | 'online' | 'degraded' | 'offline';

export type SlaveLog = (level: 'info' | 'warn', message: string) => void;

// States. A slave that answers nothing for two scans in a row is offline: it
// is only probed (one attempt, growing intervals) and writes to it fail at
// once without touching the line. A slave that answers some requests is
// degraded, not offline: it keeps being scanned at its rate, a scan goes on
// past a failed block once the slave has answered in it, and the blocks that
// were read keep their values fresh. The state follows the share of answered
// attempts among the last ones, with hysteresis so a marginal line does not
// flap (and flood the log).

/**
 * A slave is offline once it answered nothing in this many scans in a row and
 * for at least SILENCE_TO_OFFLINE_MS: a marginal line that loses 30 % of the
 * replies loses two scans in a row now and then, never a whole second.
 */
const SILENT_SCANS_TO_OFFLINE = 2;
const SILENCE_TO_OFFLINE_MS = 1000;
const FIRST_PROBE_MS = 500;
const MAX_PROBE_MS = 30_000;
/**
 * A slave whose replies come late or carry another unit id is offline from
 * the first such reply, and probed first after this: each probe of a late
 * slave holds the line for a timeout and its late reply, which its
 * neighbours would otherwise lose as scan slots.
 */
const MISBEHAVING_FIRST_PROBE_MS = 10_000;
/**
 * Such replies within this long that make a slave offline. One alone can be a
 * glitch (a reply delayed once by a busy machine); a slave that answers late
 * or misaddressed does so at every request, so the second comes within a scan
 * or two.
 */
const FAULTS_TO_OFFLINE = 2;
const FAULT_SPAN_MS = 10_000;
/** Attempts the success ratio is taken over. */
const RATIO_WINDOW = 50;
/** Fewer attempts than this say nothing yet. */
const RATIO_MIN_SAMPLES = 10;
const DEGRADED_BELOW = 0.9;
const ONLINE_FROM = 0.97;
/**
 * A line down this long makes its slaves offline (their values are no longer
 * current). A shorter drop, such as a gateway closing the connection and
 * taking it again, is not held against any slave.
 */
const LINE_DOWN_OFFLINE_MS = 1000;

/** Whether each of the last attempts was answered, in a ring. */
class AttemptWindow {
  private readonly ring = new Uint8Array(RATIO_WINDOW);
  private next = 0;
  private filled = 0;
  private answered = 0;

  record(answered: boolean): void {
    if (this.filled === RATIO_WINDOW) this.answered -= this.ring[this.next]!;
    else this.filled++;
    this.ring[this.next] = answered ? 1 : 0;
    this.answered += answered ? 1 : 0;
    this.next = (this.next + 1) % RATIO_WINDOW;
  }

  get size(): number {
    return this.filled;
  }

  /** Share of answered attempts; 1 before any. */
  ratio(): number {
    return this.filled === 0 ? 1 : this.answered / this.filled;
  }

  reset(): void {
    this.next = this.filled = this.answered = 0;
  }
}

export class SlaveHealth {
  state: SlaveState = 'starting';
  lastError = '';
  /**
   * Times the slave came back after being offline. A board that was away may
   * have been power-cycled or replaced, so counters read after it look for a
   * reset rather than a wrap.
   */
  returns = 0;
  /** Times late or misaddressed replies made the slave offline; a scan during which this grows failed, and stops. */
  faults = 0;
  /** The last late or misaddressed reply, in words. */
  lastFault = '';
  private silentScans = 0;
  private probeDelay = FIRST_PROBE_MS;
  private nextProbeAt = 0;
  private readonly attempts = new AttemptWindow();
  /** When the last replies that came late or misaddressed arrived (the most recent last). */
  private readonly faultTimes: number[] = [];
  /** performance.now() of the last answered attempt (0: never). */
  private lastAnswerAt = 0;
  /** Probes while offline, summarised in the log. */
  private readonly outage = new RepeatSummary();
  /** Armed while the line is down and the slave not yet offline for it. */
  private lineDownTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly bus: ModbusBus,
    unit: number,
    /** `Modbus slave '…' (unit … on bus …)`, for the log. */
    private readonly label: string,
    private readonly log: SlaveLog,
    /** Called when the state changed outside a scan (a reply fault, the line down). */
    private readonly changedOutsideScan: () => void,
  ) {
    bus.observe(unit, (answered) => {
      this.attempts.record(answered);
      if (answered) this.lastAnswerAt = performance.now();
    });
    bus.observeFaults(unit, (fault) => this.replyFault(fault));
    bus.observeDrops(() => this.lineDropped());
  }

  /** Share of the last attempts (up to 50) the slave answered, 1 before any. */
  get successRatio(): number {
    return this.attempts.ratio();
  }

  /** Whether the slave answers (fully or in part). */
  get answering(): boolean {
    return this.state === 'online' || this.state === 'degraded';
  }

  /** Whether a scan slot at `now` (performance.now()) is used: an offline slave is only probed, with back-off. */
  scanDue(now: number): boolean {
    return this.state !== 'offline' || now >= this.nextProbeAt;
  }

  /** A scan ended: whether the slave answered in it, and its failure if any. */
  afterScan(answered: boolean, failure: Error | undefined, now: number): void {
    if (failure) this.lastError = failure.message;
    if (!answered) {
      if (!failure) return;
      this.silentScans++;
      if (this.state === 'offline') {
        this.probeFailed(now);
      } else if (this.silentScans >= SILENT_SCANS_TO_OFFLINE && performance.now() - this.lastAnswerAt >= SILENCE_TO_OFFLINE_MS) {
        this.setState('offline', `is offline: ${this.lastError}; probing it with back-off`);
        this.outage.begin();
        this.probeDelay = FIRST_PROBE_MS;
        this.probeFailed(now);
      }
      return;
    }
    this.silentScans = 0;
    if (this.state === 'starting' || this.state === 'offline') {
      const wasOffline = this.state === 'offline';
      // Old misses say nothing about the slave that answers now.
      this.attempts.reset();
      this.probeDelay = FIRST_PROBE_MS;
      if (wasOffline) {
        this.returns++;
        this.setState('online', `is back online after ${this.outage.secondsSinceBegin} s (${this.outage.attemptsSinceBegin} probes)`);
      } else {
        this.state = 'online';
      }
      return;
    }
    const ratio = this.attempts.ratio();
    if (this.state === 'online' && this.attempts.size >= RATIO_MIN_SAMPLES && ratio < DEGRADED_BELOW) {
      this.setState('degraded', `is degraded: answered ${percent(ratio)} of the last ${this.attempts.size} attempts (last error: ${this.lastError}); still scanned`);
    } else if (this.state === 'degraded' && ratio >= ONLINE_FROM) {
      this.setState('online', `is online again: answered ${percent(ratio)} of the last ${this.attempts.size} attempts`);
    }
  }

  /** A scan was interrupted by the line going down: once it stayed down, the slave is unreachable, and tried at every scan slot (at no cost) until it is back. */
  lineDown(error: ModbusError): void {
    if (this.state === 'offline' || this.bus.downForMs() < LINE_DOWN_OFFLINE_MS) return;
    this.lastError = error.message;
    this.setState('offline', `is unreachable: ${error.message}`);
    this.outage.begin();
    this.probeDelay = FIRST_PROBE_MS;
    this.nextProbeAt = 0;
  }

  /**
   * The line dropped: if it is still down LINE_DOWN_OFFLINE_MS later, the
   * slave is offline then, whatever its scan is doing. The scan alone cannot
   * be relied on: its poll may wait in the queue for the reconnect, up to its
   * deadline (8 s on TCP with the defaults), and the slave looked online all
   * that time.
   */
  private lineDropped(): void {
    clearTimeout(this.lineDownTimer);
    this.lineDownTimer = setTimeout(this.lineDownCheck, LINE_DOWN_OFFLINE_MS);
    this.lineDownTimer.unref();
  }

  private readonly lineDownCheck = (): void => {
    this.lineDownTimer = undefined;
    // Reconnected meanwhile, or the bus was stopped (a reload or shutdown took it).
    const downMs = this.bus.downForMs();
    if (downMs === 0) return;
    if (downMs < LINE_DOWN_OFFLINE_MS) {
      this.lineDownTimer = setTimeout(this.lineDownCheck, Math.ceil(LINE_DOWN_OFFLINE_MS - downMs));
      this.lineDownTimer.unref();
      return;
    }
    const wasState = this.state;
    this.lineDown(new ModbusError('disconnected', `bus ${this.bus.name} is down (for ${(downMs / 1000).toFixed(1)} s)`));
    if (wasState !== this.state) this.changedOutsideScan();
  };

  /**
   * Its replies cannot be matched to its requests: a late one may be taken
   * for the answer to the next request, and a misaddressed one is another
   * slave's. No waiting for two silent scans: at the second such reply it is offline, so writes
   * to it fail at once, and it is probed with back-off from a longer start.
   */
  private replyFault(fault: ReplyFault): void {
    const now = performance.now();
    this.faultTimes.push(now);
    if (this.faultTimes.length > FAULTS_TO_OFFLINE) this.faultTimes.shift();
    this.lastFault =
      fault.kind === 'late' ? `answered ${fault.lateMs} ms after its ${this.bus.timeoutMs} ms timeout` : `answered with unit id ${fault.claimedUnit}`;
    if (this.state === 'offline') return;
    if (this.faultTimes.length < FAULTS_TO_OFFLINE || now - this.faultTimes[0]! > FAULT_SPAN_MS) return;
    this.faults++;
    this.lastError = this.lastFault;
    this.setState('offline', `is offline: it ${this.lastFault}; probing it with back-off from ${MISBEHAVING_FIRST_PROBE_MS / 1000} s`);
    this.outage.begin();
    this.probeDelay = MISBEHAVING_FIRST_PROBE_MS;
    this.nextProbeAt = now + this.probeDelay;
    this.changedOutsideScan();
  }

  private probeFailed(now: number): void {
    this.nextProbeAt = now + this.probeDelay;
    this.probeDelay = Math.min(this.probeDelay * 2, MAX_PROBE_MS);
    const summary = this.outage.attempt();
    if (summary) this.log('warn', `${this.label} still offline, ${summary.attempts} probes in the last ${summary.minutes} min: ${this.lastError}`);
  }

  /** One log line per transition, never one per attempt. */
  private setState(next: SlaveState, why: string): void {
    this.state = next;
    this.log(next === 'online' ? 'info' : 'warn', `${this.label} ${why}`);
  }
}

function percent(ratio: number): string {
  return `${Math.round(ratio * 100)} %`;
}
