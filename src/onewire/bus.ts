import type { Logger } from '../logging/log.js';
import { OwserverError, type OwserverClient } from '../owserver/client.js';
import { createSensor, type OneWireSensor, type SensorPort } from './sensor.js';

// One 1-Wire bus behind owserver: searches it for devices every
// `scanInterval` seconds and reads each device every `interval` seconds, one
// owserver request at a time (as EVOK did), always the one that is due
// first. It runs beside the Modbus buses and the HTTP server and shares
// nothing with them: APIs read the devices' cached state, never owserver.
//
// Failures: a device that fails a read is `lost` and retried at a growing
// period (its interval doubled per failure, up to 300 s, as EVOK); owserver
// itself not answering makes every device `lost` and is probed by the search
// alone, with back-off, until it answers again. Each of these transitions is
// logged and pushed once.

/** EVOK's cap on the retry period of a failing device. */
const MAX_RETRY_S = 300;
/** Probing a missing owserver: first after 1 s, doubling up to a minute. */
const FIRST_PROBE_MS = 1000;
const MAX_PROBE_MS = 60_000;
/**
 * Devices kept per bus. A real 1-Wire bus holds tens; a bus that reports
 * thousands is broken (or an owserver is lying), and each one would cost
 * memory and owserver requests for ever.
 */
const MAX_DEVICES = 500;
/** `28.95DCD5090000.35`: family, 48-bit id, CRC. */
const ADDRESS = /^\/?([0-9A-F]{2}\.[0-9A-F]{12}\.[0-9A-F]{2})$/;

export interface OneWireBusOptions {
  name: string;
  client: OwserverClient;
  interval: number;
  scanInterval: number;
  log: Logger;
  /** A device found for the first time (to register it). */
  discovered(sensor: OneWireSensor): void;
  /** Devices whose visible state changed (to push them). */
  changed(sensors: OneWireSensor[]): void;
}

export class OneWireBus {
  readonly name: string;
  interval: number;
  scanInterval: number;
  /** By address, in the order found. */
  readonly sensors = new Map<string, OneWireSensor>();
  /** Requests sent, and how many failed, for /metrics. */
  readonly stats = { requests: 0, failures: 0 };
  /** Settles when the first search is over, answered or not. */
  readonly firstScan: Promise<void>;
  private resolveFirstScan!: () => void;
  /** Whether owserver answered the last search; undefined before the first. */
  private reachable: boolean | undefined;
  private probeMs = FIRST_PROBE_MS;
  private scanDue = 0;
  private readonly due = new Map<OneWireSensor, number>();
  private readonly failures = new Map<OneWireSensor, number>();
  /** Addresses whose chip we do not serve, so their type is not asked again each search. */
  private readonly ignored = new Set<string>();
  private scanWaiters: Array<() => void> = [];
  /** Devices of the first search not yet read once; firstScan settles when none is left. */
  private firstReads: Set<OneWireSensor> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private busy = false;
  private stopped = true;
  /** MAX_DEVICES reached (said once). */
  private full = false;
  private readonly client: OwserverClient;
  private readonly log: Logger;
  private readonly options: OneWireBusOptions;

  constructor(options: OneWireBusOptions) {
    this.options = options;
    this.name = options.name;
    this.client = options.client;
    this.interval = options.interval;
    this.scanInterval = options.scanInterval;
    this.log = options.log;
    this.firstScan = new Promise((resolve) => (this.resolveFirstScan = resolve));
  }

  get where(): string {
    return this.client.where;
  }

  /** Whether owserver answered the last search (false also before the first). */
  get connected(): boolean {
    return this.reachable === true;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.scanDue = performance.now();
    this.kick();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.client.abortAll();
    for (const wake of this.scanWaiters.splice(0)) wake();
  }

  /** Search the bus now; resolves once that search is over, true when owserver answered it. */
  scanNow(): Promise<boolean> {
    if (this.stopped) return Promise.resolve(false);
    this.scanDue = performance.now();
    const done = new Promise<void>((resolve) => this.scanWaiters.push(resolve));
    this.kick();
    return done.then(() => this.connected);
  }

  /** A new bus interval applies to every device and reads them all now, as in EVOK. */
  setInterval(seconds: number): void {
    this.interval = seconds;
    const now = performance.now();
    const changed: OneWireSensor[] = [];
    for (const sensor of this.sensors.values()) {
      sensor.interval = seconds;
      this.due.set(sensor, now);
      if (sensor.refresh()) changed.push(sensor);
    }
    if (changed.length > 0) this.options.changed(changed);
    this.kick();
  }

  setScanInterval(seconds: number): void {
    this.scanInterval = seconds;
    if (this.reachable) this.scanDue = performance.now() + seconds * 1000;
    this.kick();
  }

  /** A device's own interval changed: its next read is at most one new period away. */
  readonly reschedule = (sensor: OneWireSensor): void => {
    const next = performance.now() + sensor.interval * 1000;
    this.due.set(sensor, Math.min(this.due.get(sensor) ?? next, next));
    this.kick();
  };

  /** Arms the timer for whatever is due first, unless a request is under way (it re-arms when done). */
  private kick(): void {
    if (this.stopped || this.busy) return;
    clearTimeout(this.timer);
    let next = this.scanDue;
    if (this.reachable) for (const at of this.due.values()) next = Math.min(next, at);
    this.timer = setTimeout(() => void this.runDue(), Math.max(0, next - performance.now()));
  }

  private async runDue(): Promise<void> {
    this.timer = undefined;
    this.busy = true;
    let scanned = false;
    try {
      const now = performance.now();
      if (now >= this.scanDue) {
        scanned = true;
        await this.scan();
      } else if (this.reachable) {
        const sensor = this.firstDue(now);
        if (sensor) await this.read(sensor);
      }
    } catch (error) {
      // A fault of ours must not end the bus (nor the process): say it and go on with the schedule.
      this.log.error(`1-Wire bus ${this.name}: ${(error as Error).stack ?? String(error)}`);
    } finally {
      if (scanned) for (const wake of this.scanWaiters.splice(0)) wake();
      this.busy = false;
      this.kick();
    }
  }

  private firstDue(now: number): OneWireSensor | undefined {
    let first: OneWireSensor | undefined;
    let firstAt = Infinity;
    for (const [sensor, at] of this.due) {
      if (at <= now && at < firstAt) {
        first = sensor;
        firstAt = at;
      }
    }
    return first;
  }

  private async scan(): Promise<void> {
    let entries: string[];
    try {
      entries = await this.listRoot();
    } catch (error) {
      this.unreachable(error);
      return;
    }
    if (this.stopped) return;
    if (this.reachable === false) this.log.info(`1-Wire bus ${this.name}: owserver ${this.where} answers again`);
    this.reachable = true;
    this.probeMs = FIRST_PROBE_MS;
    this.scanDue = performance.now() + this.scanInterval * 1000;

    const present = new Set<string>();
    for (const entry of entries) {
      const match = ADDRESS.exec(entry.trim());
      if (match) present.add(match[1]!);
    }
    const now = performance.now();
    const changed: OneWireSensor[] = [];
    for (const address of present) {
      const known = this.sensors.get(address);
      if (known) {
        // Back after a search missed it, or owserver was away: read it now.
        if (known.lost) this.due.set(known, now);
        continue;
      }
      if (this.ignored.has(address)) continue;
      if (this.sensors.size + this.ignored.size >= MAX_DEVICES) {
        if (!this.full) this.log.warn(`1-Wire bus ${this.name}: more than ${MAX_DEVICES} devices listed; the others are ignored`);
        this.full = true;
        break;
      }
      await this.adopt(address);
      if (this.stopped || !this.reachable) return;
    }
    for (const sensor of this.sensors.values()) {
      if (present.has(sensor.address) || sensor.lost) continue;
      sensor.lost = true;
      this.log.info(`1-Wire bus ${this.name}: ${sensor.chip} ${sensor.address} is no longer on the bus`);
      if (sensor.refresh()) changed.push(sensor);
    }
    if (changed.length > 0) this.options.changed(changed);
    if (!this.firstReads) {
      this.firstReads = new Set(this.sensors.values());
      this.firstReadDone(undefined);
    }
  }

  private firstReadDone(sensor: OneWireSensor | undefined): void {
    if (!this.firstReads) return;
    if (sensor) this.firstReads.delete(sensor);
    if (this.firstReads.size === 0) this.resolveFirstScan();
  }

  /** DIRALL, or DIR for a server that does not know DIRALL. */
  private async listRoot(): Promise<string[]> {
    this.stats.requests++;
    try {
      return await this.client.dirall('/');
    } catch (error) {
      if (!(error instanceof OwserverError && error.kind === 'server')) {
        this.stats.failures++;
        throw error;
      }
    }
    this.stats.requests++;
    try {
      return await this.client.dir('/');
    } catch (error) {
      this.stats.failures++;
      throw error;
    }
  }

  private async adopt(address: string): Promise<void> {
    let chip: string;
    try {
      this.stats.requests++;
      chip = (await this.client.read(`/${address}/type`)).trim();
    } catch (error) {
      this.stats.failures++;
      if (error instanceof OwserverError && (error.kind === 'unreachable' || error.kind === 'timeout')) this.unreachable(error);
      // Otherwise the next search asks again.
      return;
    }
    if (this.stopped) return;
    const sensor = createSensor(address, chip, this.interval, this.reschedule);
    if (!sensor) {
      this.ignored.add(address);
      this.log.debug(`1-Wire bus ${this.name}: ${chip} ${address} is not a device type iogate serves; ignored`);
      return;
    }
    this.sensors.set(address, sensor);
    this.due.set(sensor, performance.now());
    this.log.info(`1-Wire bus ${this.name}: found ${chip} ${address}`);
    this.options.discovered(sensor);
  }

  private async read(sensor: OneWireSensor): Promise<void> {
    const port: SensorPort = {
      text: (property) => this.request(() => this.client.read(`/${sensor.address}/${property}`)),
      number: (property) => this.request(() => this.client.readNumber(`/${sensor.address}/${property}`)),
    };
    const now = performance.now();
    try {
      const accepted = await sensor.sample(port);
      if (this.stopped) return;
      if (accepted) {
        if (sensor.lost) this.log.info(`1-Wire bus ${this.name}: ${sensor.chip} ${sensor.address} answers again`);
        sensor.lost = false;
        sensor.time = Math.round(Date.now()) / 1000;
        sensor.readAt = performance.now();
      }
      this.failures.delete(sensor);
      this.due.set(sensor, now + sensor.interval * 1000);
    } catch (error) {
      if (this.stopped) return;
      if (error instanceof OwserverError && error.kind === 'unreachable') {
        this.unreachable(error);
        return;
      }
      const failures = (this.failures.get(sensor) ?? 0) + 1;
      this.failures.set(sensor, failures);
      const retryS = Math.min(sensor.interval * 2 ** failures, Math.max(MAX_RETRY_S, sensor.interval));
      this.due.set(sensor, now + retryS * 1000);
      if (!sensor.lost) this.log.info(`1-Wire bus ${this.name}: ${sensor.chip} ${sensor.address} lost: ${(error as Error).message}`);
      sensor.lost = true;
    }
    if (sensor.refresh()) this.options.changed([sensor]);
    this.firstReadDone(sensor);
  }

  private async request<T>(send: () => Promise<T>): Promise<T> {
    this.stats.requests++;
    try {
      return await send();
    } catch (error) {
      this.stats.failures++;
      throw error;
    }
  }

  /** owserver does not answer: every device is lost until a search succeeds again. */
  private unreachable(error: unknown): void {
    if (this.stopped) return;
    const message = error instanceof Error ? error.message : String(error);
    if (this.reachable !== false) {
      this.log.warn(
        this.reachable === undefined
          ? `1-Wire bus ${this.name}: owserver ${this.where} does not answer (${message}); its sensors will appear once it does, retrying with back-off`
          : `1-Wire bus ${this.name}: owserver ${this.where} stopped answering (${message}); sensors are marked lost, retrying with back-off`,
      );
    }
    this.reachable = false;
    // Start-up does not wait for an owserver that is not there.
    this.resolveFirstScan();
    this.scanDue = performance.now() + this.probeMs;
    this.probeMs = Math.min(this.probeMs * 2, MAX_PROBE_MS);
    const changed: OneWireSensor[] = [];
    for (const sensor of this.sensors.values()) {
      sensor.lost = true;
      this.failures.delete(sensor);
      if (sensor.refresh()) changed.push(sensor);
    }
    if (changed.length > 0) this.options.changed(changed);
  }
}
