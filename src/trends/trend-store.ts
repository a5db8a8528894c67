import type { Device } from '../devices/device.js';
import type { Registry } from '../registry/registry.js';

// The last hour of every analog input, analog output and 1-Wire value, for the
// panel's charts: one sample per step of each value's current reading (what a
// GET would answer then), in a fixed ring per value. Memory is bounded by the
// number of values: a Float32Array of span/step samples each (NaN = nothing
// read), allocated once when the value is first seen. Sampling reads the
// registry; it never touches a bus.

export interface TrendOptions {
  /** Seconds between samples. */
  stepS?: number;
  /** Seconds a series keeps. */
  spanS?: number;
  /** Unix time in ms; tests move it. */
  now?: () => number;
}

export interface TrendSeries {
  dev: string;
  circuit: string;
  field: string;
  unit: string | null;
  /** Unix time of values[0], s. */
  start: number;
  values: Array<number | null>;
}

/** Which fields of a device are sampled: readings that are numbers. */
function sampledFields(device: Device): readonly string[] {
  const state = device.full();
  switch (state['dev']) {
    case 'ai':
    case 'ao':
    case 'temp':
      return VALUE;
    case '1wdevice':
      // A DS2438; a PIO chip's value is a bit mask, not a trend.
      return 'humidity' in state ? MULTI_SENSOR : NONE;
    default:
      return NONE;
  }
}

const VALUE = ['value'];
const MULTI_SENSOR = ['temp', 'humidity', 'vad', 'vdd'];
const NONE: readonly string[] = [];
const SAMPLED_TYPES = ['ai', 'ao', 'sensor'] as const;

const UNITS: Record<string, string> = { temp: '°C', humidity: '%RH', vad: 'V', vdd: 'V' };

class Ring {
  readonly samples: Float32Array;
  /** Index of the next sample's slot. */
  next = 0;
  /** Samples taken, up to the ring's length. */
  count = 0;

  constructor(
    readonly device: Device,
    readonly field: string,
    length: number,
  ) {
    this.samples = new Float32Array(length);
  }

  push(value: number): void {
    this.samples[this.next] = value;
    this.next = (this.next + 1) % this.samples.length;
    if (this.count < this.samples.length) this.count++;
  }
}

export class TrendStore {
  readonly stepS: number;
  readonly spanS: number;
  private readonly length: number;
  private readonly now: () => number;
  private readonly rings = new Map<string, Ring>();
  /** Unix time (s) of the newest sample of every ring. */
  private lastSampleAt: number | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly registry: Registry,
    { stepS = 10, spanS = 3600, now = Date.now }: TrendOptions = {},
  ) {
    this.stepS = stepS;
    this.spanS = spanS;
    this.length = Math.max(1, Math.round(spanS / stepS));
    this.now = now;
  }

  /** Sample now and every step from now on; the timer never keeps the process alive. */
  start(): void {
    this.sample();
    this.timer = setInterval(() => this.sample(), this.stepS * 1000);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Take one sample of every value; a value first seen now starts its ring. */
  sample(): void {
    for (const type of SAMPLED_TYPES) {
      for (const device of this.registry.list(type)) {
        for (const field of sampledFields(device)) {
          const key = `${device.type}/${device.circuit}/${field}`;
          let ring = this.rings.get(key);
          if (!ring) this.rings.set(key, (ring = new Ring(device, field, this.length)));
          ring.push(reading(device, field));
        }
      }
    }
    this.lastSampleAt = this.now() / 1000;
  }

  /** Bytes the sample buffers hold (the rings' fixed cost). */
  sampleBytes(): number {
    let bytes = 0;
    for (const ring of this.rings.values()) bytes += ring.samples.byteLength;
    return bytes;
  }

  get seriesCount(): number {
    return this.rings.size;
  }

  /** Every series, oldest sample first. */
  series(): TrendSeries[] {
    const out: TrendSeries[] = [];
    const last = this.lastSampleAt;
    if (last === undefined) return out;
    for (const ring of this.rings.values()) {
      const values: Array<number | null> = new Array(ring.count);
      const first = (ring.next - ring.count + ring.samples.length) % ring.samples.length;
      for (let i = 0; i < ring.count; i++) {
        const sample = ring.samples[(first + i) % ring.samples.length]!;
        values[i] = Number.isNaN(sample) ? null : round(sample);
      }
      const state = ring.device.full();
      const unit = ring.field === 'value' ? (typeof state['unit'] === 'string' ? state['unit'] : state['dev'] === 'temp' ? '°C' : null) : (UNITS[ring.field] ?? null);
      out.push({
        dev: String(state['dev']),
        circuit: ring.device.circuit,
        field: ring.field,
        unit,
        start: round3(last - (ring.count - 1) * this.stepS),
        values,
      });
    }
    return out;
  }

  /** The `/trends` reply. */
  json(): string {
    return JSON.stringify({ step_s: this.stepS, span_s: this.spanS, now: round3(this.now() / 1000), series: this.series() });
  }
}

/** The value a GET would show now; NaN when there is none (not read yet, slave offline, sensor lost). */
function reading(device: Device, field: string): number {
  if (device.unavailable() !== undefined) return Number.NaN;
  const state = device.full();
  if (state['lost'] === true) return Number.NaN;
  const value = state[field];
  return typeof value === 'number' ? value : Number.NaN;
}

/** Float32 keeps 7 significant digits; show no more than that. */
function round(value: number): number {
  return Number(value.toPrecision(7));
}

function round3(value: number): number {
  return Math.round(value * 1000) / 1000;
}
