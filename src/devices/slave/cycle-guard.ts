import type { ModbusBus } from '../../modbus/bus.js';
import type { SlaveUnit } from './slave-unit.js';

// A board's master watchdog resets its outputs when the master stays silent
// longer than its timeout. A bus whose scan cycle is a sizeable part of that
// timeout is one slow slave away from tripping it, so the operator hears about
// it: once at start (configured scan periods against the timeouts read from
// the boards) and at run time whenever the measured cycle crosses a quarter of
// the shortest enabled watchdog timeout on that bus, one line each way.

export const WATCHDOG_SHARE = 0.25;
const CHECK_EVERY_MS = 10_000;

/** A bus's cycle time: the longest measured scan-to-scan time among its answering slaves. */
export function busCycleMs(bus: ModbusBus, slaves: readonly SlaveUnit[]): number {
  let cycle = 0;
  for (const slave of slaves) if (slave.bus === bus && slave.answering) cycle = Math.max(cycle, slave.stats.cycleMs);
  return cycle;
}

/** The shortest timeout (ms) of an enabled watchdog on the bus's slaves, as last read from the boards. */
export function shortestWatchdogMs(bus: ModbusBus, slaves: readonly SlaveUnit[]): number | undefined {
  let shortest: number | undefined;
  for (const slave of slaves) {
    if (slave.bus !== bus) continue;
    for (const device of slave.devices) {
      if (device.type !== 'watchdog') continue;
      const { value, timeout } = device.full();
      if (typeof value !== 'number' || (value & 1) === 0 || typeof timeout !== 'number' || timeout <= 0) continue;
      shortest = shortest === undefined ? timeout : Math.min(shortest, timeout);
    }
  }
  return shortest;
}

export class CycleGuard {
  private readonly warned = new Set<ModbusBus>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly buses: readonly ModbusBus[],
    private readonly slaves: readonly SlaveUnit[],
    private readonly log: (level: 'info' | 'warn', message: string) => void,
  ) {}

  /** At start the configured scan periods count too: nothing is measured yet. */
  check(atStart = false): void {
    for (const bus of this.buses) {
      const watchdogMs = shortestWatchdogMs(bus, this.slaves);
      if (watchdogMs === undefined) continue;
      let cycleMs = busCycleMs(bus, this.slaves);
      if (atStart) {
        for (const slave of this.slaves) if (slave.bus === bus) cycleMs = Math.max(cycleMs, slave.scanPeriodMs);
      }
      const limit = watchdogMs * WATCHDOG_SHARE;
      const what = atStart ? 'scan cycle (configured or measured)' : 'measured scan cycle';
      if (cycleMs > limit && !this.warned.has(bus)) {
        this.warned.add(bus);
        this.log(
          'warn',
          `bus ${bus.name}: ${what} of ${Math.round(cycleMs)} ms exceeds a quarter of the shortest watchdog timeout on it (${watchdogMs} ms); a slower scan may let the watchdog reset the outputs`,
        );
      } else if (cycleMs <= limit && this.warned.has(bus) && !atStart) {
        this.warned.delete(bus);
        this.log('info', `bus ${bus.name}: scan cycle back to ${Math.round(cycleMs)} ms, under a quarter of its shortest watchdog timeout (${watchdogMs} ms)`);
      }
    }
  }

  start(everyMs = CHECK_EVERY_MS): void {
    this.check(true);
    this.timer = setInterval(() => this.check(), everyMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
