import { RepeatSummary } from '../logging/repeat-summary.js';

// When a Modbus line that could not be opened, or dropped, is tried again:
// first after reconnectMs, then twice as long each time up to
// maxReconnectMs, so a line that stays down costs little while one that
// blinked comes back at once. The log gets one line when the outage begins,
// a summary now and then while it lasts, and one when the line is back.

export interface ReconnectOptions {
  /** The bus's name, as the log names it. */
  name: string;
  /** First reconnect delay; doubles up to maxReconnectMs. */
  reconnectMs?: number;
  maxReconnectMs?: number;
  log?: (level: 'info' | 'warn' | 'error', message: string) => void;
}

export class ReconnectBackoff {
  private timer: NodeJS.Timeout | undefined;
  private delay: number;
  /** Reopen attempts while the line is down, summarised in the log instead of one line each. */
  private readonly outage = new RepeatSummary();
  private down = false;

  constructor(
    private readonly options: ReconnectOptions,
    /** The link, as the log names it. */
    private readonly spec: string,
    /** Tries to open the line once. */
    private readonly reopen: () => void,
  ) {
    this.delay = options.reconnectMs ?? 100;
  }

  /** The line is down (`reason`): it is reopened after the current delay, which then doubles. */
  schedule(reason: string): void {
    const { name, log, maxReconnectMs } = this.options;
    if (!this.down) {
      this.down = true;
      this.outage.begin();
      log?.('warn', `bus ${name}: ${reason}; reconnecting with back-off up to ${(maxReconnectMs ?? 10_000) / 1000} s`);
    }
    const summary = this.outage.attempt();
    if (summary) {
      log?.('warn', `bus ${name}: still down (${reason}), ${summary.attempts} attempts in the last ${summary.minutes} min`);
    }
    clearTimeout(this.timer);
    this.timer = setTimeout(this.reopen, this.delay);
    this.delay = Math.min(this.delay * 2, maxReconnectMs ?? 10_000);
  }

  /** The line is open: the outage, if any, ends, and the next one starts from the first delay. */
  connected(): void {
    if (this.down) {
      this.down = false;
      this.options.log?.(
        'info',
        `bus ${this.options.name}: reconnected to ${this.spec} after ${this.outage.secondsSinceBegin} s and ${this.outage.attemptsSinceBegin} attempts`,
      );
    }
    this.delay = this.options.reconnectMs ?? 100;
  }

  /** For good: no reopen stays scheduled. */
  stop(): void {
    clearTimeout(this.timer);
  }
}
