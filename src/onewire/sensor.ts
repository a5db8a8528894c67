import { Device, type DeviceState } from '../devices/device.js';
import { decimal, type FieldSpec } from '../devices/fields.js';
import { DEFAULT_STALE_RULE, qualityOf, staleBoundMs, type PointMeta, type StaleRule } from '../devices/quality/point-meta.js';

// A 1-Wire device found on an owserver bus, served as EVOK's canonical type
// `sensor`: thermometers as `"dev": "temp"`, DS2438 multisensors and PIO
// chips as `"dev": "1wdevice"`. Each keeps its last good readings, whether
// its last read failed (`lost`) and when it last read well (`time`, Unix
// seconds). The bus reads it; a GET never waits for owserver.

/** What a sensor reads through: its own properties on owserver (`temperature`, `sensed.ALL` …). */
export interface SensorPort {
  text(property: string): Promise<string>;
  number(property: string): Promise<number>;
}

/** Tells the bus that a sensor's period changed, so it is read on the new schedule. */
export type Reschedule = (sensor: OneWireSensor) => void;

interface SensorWrite {
  interval: number;
}

/** Longest sensor period accepted: a day. */
export const MAX_INTERVAL_S = 86_400;

const SENSOR_SETTINGS: ReadonlySet<string> = new Set(['interval']);

export abstract class OneWireSensor extends Device<SensorWrite> {
  readonly type = 'sensor' as const;
  /** A new reading period is no reading: EVOK pushes sensors after reads and when they are lost. */
  protected override readonly settingFields: ReadonlySet<string> = SENSOR_SETTINGS;
  protected readonly writeSpec: FieldSpec<SensorWrite> = { interval: decimal(1, MAX_INTERVAL_S) };
  lost = false;
  /** Unix time in seconds of the last good read; null before it. */
  time: number | null = null;
  /** performance.now() of the last accepted reading (0: none), for its age: `time` is the wall clock's, for EVOK. */
  readAt = 0;
  /** When its reading counts as stale; set by the runtime from the configuration. */
  staleRule: StaleRule = DEFAULT_STALE_RULE;

  constructor(
    /** owserver's form, `28.95DCD5090000.35`; the circuit is the same without dots. */
    readonly address: string,
    /** The chip, as owserver names it: `DS18B20`, `DS2438` … */
    readonly chip: string,
    public interval: number,
    private readonly reschedule: Reschedule,
  ) {
    super(address.replace(/\./g, ''));
  }

  /**
   * Reads the device's properties; false when the reading was discarded (a
   * thermometer's power-on value). Throws the owserver error of a failed read.
   */
  abstract sample(port: SensorPort): Promise<boolean>;

  /** Offline while its last read failed (or it left the bus), stale past its stale bound of `interval`. */
  override pointMeta(now: number): PointMeta {
    const confirmedAt = this.readAt;
    return { quality: qualityOf(confirmedAt, !this.lost, staleBoundMs(this.interval * 1000, this.staleRule), now), confirmedAt };
  }

  protected async apply(params: Partial<SensorWrite>): Promise<void> {
    if (params.interval === undefined) return;
    this.interval = params.interval;
    this.reschedule(this);
  }
}

/** DS18B20 reads 85.0 °C after power-on, before its first conversion. */
const POWER_ON_READING = 85;
const POWER_ON_JUMP = 2;

/** DS18B20, DS18S20, DS1822, DS1825: `{"dev": "temp", …}`. */
export class Thermometer extends OneWireSensor {
  value: number | null = null;
  private lastRaw: number | undefined;

  async sample(port: SensorPort): Promise<boolean> {
    const raw = await port.number('temperature');
    const previous = this.lastRaw;
    this.lastRaw = raw;
    // The power-on value is dropped when it jumps from the last value; two
    // in a row, or one close to the last value, is a real 85 °C.
    if (raw === POWER_ON_READING && previous !== POWER_ON_READING && !(this.value !== null && Math.abs(this.value - raw) <= POWER_ON_JUMP)) {
      return false;
    }
    this.value = roundTo(raw, 0.05);
    return true;
  }

  protected decode(): DeviceState {
    return {
      dev: 'temp',
      circuit: this.circuit,
      address: this.address,
      value: this.value,
      lost: this.lost,
      time: this.time,
      interval: this.interval,
      type: this.chip,
    };
  }
}

interface MultiReadings {
  humidity: number;
  vdd: number;
  vad: number;
  temp: number;
  vis: number;
}

/** DS2438 (Unipi 1W-TH and similar): temperature, humidity, voltages. All read together or not at all. */
export class MultiSensor extends OneWireSensor {
  private readings: MultiReadings | undefined;

  async sample(port: SensorPort): Promise<boolean> {
    // One after the other: owserver serialises them on the bus anyway.
    const temp = await port.number('temperature');
    const humidity = await port.number('HIH4000/humidity');
    const vdd = await port.number('VDD');
    const vad = await port.number('VAD');
    const vis = await port.number('vis');
    this.readings = { humidity, vdd, vad, temp, vis };
    return true;
  }

  protected decode(): DeviceState {
    const readings = this.readings;
    return {
      dev: '1wdevice',
      circuit: this.circuit,
      humidity: readings?.humidity ?? null,
      vdd: readings?.vdd ?? null,
      vad: readings?.vad ?? null,
      temp: readings?.temp ?? null,
      vis: readings?.vis ?? null,
      lost: this.lost,
      time: this.time,
      interval: this.interval,
      type: this.chip,
    };
  }
}

/**
 * DS2408, DS2406, DS2413 (PIO) and DS2404: EVOK's fields (with `value` the
 * sensed pin levels as a bit mask, bit 0 = PIO 0 or A), then `lost`, `time`,
 * `interval`. A DS2404 has no pins; its `value` stays null.
 */
export class PioChip extends OneWireSensor {
  value: number | null = null;

  async sample(port: SensorPort): Promise<boolean> {
    if (this.chip === 'DS2404') {
      await port.text('type');
      return true;
    }
    const levels = (await port.text('sensed.ALL')).split(',').map((bit) => bit.trim());
    if (levels.length === 0 || levels.length > 8 || levels.some((bit) => bit !== '0' && bit !== '1')) {
      throw new Error(`sensed.ALL: unexpected reply '${levels.join(',').slice(0, 40)}'`);
    }
    this.value = levels.reduce((mask, bit, index) => (bit === '1' ? mask | (1 << index) : mask), 0);
    return true;
  }

  protected decode(): DeviceState {
    return {
      dev: '1wdevice',
      circuit: this.circuit,
      address: this.address,
      value: this.value,
      type: this.chip,
      lost: this.lost,
      time: this.time,
      interval: this.interval,
    };
  }
}

const THERMOMETERS = new Set(['DS18B20', 'DS18S20', 'DS1822', 'DS1825']);
const PIO_CHIPS = new Set(['DS2408', 'DS2406', 'DS2413', 'DS2404']);

/** The device for a chip owserver reports, or undefined for chips EVOK does not serve. */
export function createSensor(address: string, chip: string, interval: number, reschedule: Reschedule): OneWireSensor | undefined {
  if (THERMOMETERS.has(chip)) return new Thermometer(address, chip, interval, reschedule);
  if (chip === 'DS2438') return new MultiSensor(address, chip, interval, reschedule);
  if (PIO_CHIPS.has(chip)) return new PioChip(address, chip, interval, reschedule);
  return undefined;
}

/** The chips `owbus_list` answers for even when none is present (EVOK's keys). */
export const LISTED_CHIPS: readonly string[] = ['DS18S20', 'DS18B20', 'DS2438', 'DS2408', 'DS2413'];

/** Rounded to a multiple of `step`, printed without binary noise (23.05, not 23.050000000000001). */
function roundTo(value: number, step: number): number {
  return Number((Math.round(value / step) * step).toFixed(10));
}
