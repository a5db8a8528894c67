import { parseFields, schemaRefusal, type FieldSpec, type UnknownField } from './fields.js';
import { floatText, objectJson } from '../text/json-text.js';
import { metaFields, type PointMeta } from './quality/point-meta.js';

// A device is one addressable thing of the API (`di 1_01`, `ro 2_03` …). It
// decodes its state from the slave's register cache and keeps the JSON text of
// that state ready, so a GET costs a lookup and a write of bytes.

export type DeviceType =
  | 'di'
  | 'ro'
  | 'do'
  | 'ai'
  | 'ao'
  | 'sensor'
  | 'led'
  | 'watchdog'
  | 'modbus_slave'
  | 'owpower'
  | 'register'
  | 'data_point'
  | 'owbus'
  | 'device_info'
  | 'run'
  | 'nv_save'
  | 'cover'
  | 'interlock'
  | 'automation';

export type DeviceState = Record<string, unknown>;

/** `floatFields` of devices whose `value` EVOK writes as a float (analog values). */
export const FLOAT_VALUE: ReadonlySet<string> = new Set(['value']);

export abstract class Device<P extends object = object> {
  abstract readonly type: DeviceType;
  /** Whether changes are pushed to WebSocket, webhook and MQTT listeners. */
  readonly eventCapable: boolean = true;
  /** Whether an alias may be given to it (EVOK: not modbus_slave, device_info, run). */
  readonly aliasable: boolean = true;
  /** Whether its JSON changes without any event (ages by itself), so listings must not keep it. */
  readonly volatile: boolean = false;
  alias: string | undefined;
  /**
   * Whether the last change refresh() found is one EVOK pushes: false when only
   * settings changed (alias, `settingFields`). Listeners that keep EVOK's event
   * set skip the device then; MQTT, which mirrors every state, does not.
   */
  changeIsEvent = true;
  private state: DeviceState | undefined;
  private text: string | undefined;
  /** performance.now() of the last write the hardware confirmed; 0 before any. */
  protected writeConfirmedAt = 0;

  protected abstract readonly writeSpec: FieldSpec<P>;
  /** Fields EVOK writes as floats (`5.0`, not `5`); see isFloat. */
  protected readonly floatFields: ReadonlySet<string> | undefined = undefined;
  /**
   * Fields whose change alone EVOK never pushes (configuration, not readings:
   * a DI's debounce, a watchdog's timeout). `alias` is one for every type.
   */
  protected readonly settingFields: ReadonlySet<string> = NO_FIELDS;
  /** How a field this type does not take is refused: EVOK's error key differs by type. */
  protected readonly unknownField: UnknownField = schemaRefusal;

  constructor(readonly circuit: string) {}

  /** The device's fields in EVOK's order, without `alias`. */
  protected abstract decode(): DeviceState;

  /** Perform validated writes on the hardware; resolves once the slave confirmed them. */
  protected abstract apply(params: Partial<P>): Promise<void>;

  /** EVOK's `full()` object. Do not mutate: it is shared until the next change. */
  full(): DeviceState {
    return (this.state ??= this.withAlias(this.decode()));
  }

  json(): string {
    return (this.text ??= this.stateJson(this.full()));
  }

  /** JSON text of one field of `full()`, a float where EVOK writes one. */
  fieldJson(field: string): string {
    const value = this.full()[field];
    return this.isFloat(field, value) ? floatText(value) : (JSON.stringify(value) ?? 'null');
  }

  protected stateJson(state: DeviceState): string {
    return this.floatFields ? objectJson(state, (field, value) => this.isFloat(field, value)) : JSON.stringify(state);
  }

  /** Whether EVOK writes this field, with this value, as a Python float. */
  protected isFloat(field: string, _value: unknown): boolean {
    return this.floatFields?.has(field) ?? false;
  }

  /**
   * Re-decode from the cache; true when anything visible changed. Most
   * refreshes find nothing new, so states are compared field by field and the
   * JSON text is rebuilt only after a real change.
   */
  refresh(): boolean {
    const before = this.full();
    const after = this.withAlias(this.decode());
    if (sameState(before, after)) return false;
    this.changeIsEvent = changesReading(before, after, this.settingFields);
    this.state = after;
    this.text = undefined;
    return true;
  }

  /**
   * Check a write completely before anything happens; the returned action then
   * performs it. Splitting the two keeps a half-valid request from writing half.
   */
  prepareWrite(raw: Readonly<Record<string, unknown>>): () => Promise<void> {
    const params = parseFields(this.writeSpec, raw, this.unknownField);
    this.checkWrite(params);
    return async () => {
      await this.apply(params);
      this.writeConfirmedAt = performance.now();
    };
  }

  /**
   * Quality and age of the device's state. A device with no source that can
   * fail (device_info, the alias table) is always good; those read from a
   * board or a sensor override this.
   */
  pointMeta(_now: number): PointMeta {
    return { quality: 'good', confirmedAt: this.writeConfirmedAt };
  }

  /** Fields only the meta view shows besides quality and age (a DI's `counter_total`). */
  protected extraMeta(): Record<string, unknown> | undefined {
    return undefined;
  }

  /** The meta view's fields: `quality`, `ts`, `age_s`, then the device's own extras. */
  /** `now`: performance.now() (point-meta.ts: ages run on the monotonic clock). */
  metaState(now = performance.now()): DeviceState {
    const extra = this.extraMeta();
    const meta = metaFields(this.pointMeta(now), now);
    return extra ? { ...meta, ...extra } : meta;
  }

  /** `full()` with the meta fields appended, for clients that asked for them. */
  metaFull(now = performance.now()): DeviceState {
    return { ...this.full(), ...this.metaState(now) };
  }

  /** json() with the meta fields appended; made per call, as the age moves by itself. */
  metaJson(now = performance.now()): string {
    const json = this.json();
    return `${json.slice(0, -1)},${JSON.stringify(this.metaState(now)).slice(1)}`;
  }

  /**
   * Checks that depend on the device's state rather than on one field alone,
   * such as a set point against the range of the mode it will be written in.
   * Throws ValidationError; every API writes through prepareWrite, so this is
   * the one place such a rule lives.
   */
  protected checkWrite(_params: Partial<P>): void {}

  /**
   * Re-decode what a write to this device may have changed. Returns true when
   * the caller must report this device as changed; devices on a Modbus slave
   * report their whole slave's changes themselves and return false.
   */
  settle(): boolean {
    return this.refresh();
  }

  /** Why the device cannot be read now (its slave is offline), or undefined. */
  unavailable(): string | undefined {
    return undefined;
  }

  get writableFields(): readonly string[] {
    return Object.keys(this.writeSpec);
  }

  private withAlias(state: DeviceState): DeviceState {
    if (this.alias) state['alias'] = this.alias;
    return state;
  }
}

const NO_FIELDS: ReadonlySet<string> = new Set();

/** Whether a field other than `alias` and the settings differs between two unequal states. */
function changesReading(a: DeviceState, b: DeviceState, settings: ReadonlySet<string>): boolean {
  for (const key in b) {
    if (key === 'alias' || settings.has(key)) continue;
    if (!(key in a) || !sameState({ [key]: a[key] }, { [key]: b[key] })) return true;
  }
  for (const key in a) if (!(key in b) && key !== 'alias' && !settings.has(key)) return true;
  return false;
}

/**
 * Equal states: same keys with the same values (decode() always builds its
 * fields in one order, so order needs no check). Arrays and
 * mappings taken from the board model are shared objects, so identity settles
 * them; any other object is compared by its JSON text.
 */
function sameState(a: DeviceState, b: DeviceState): boolean {
  let count = 0;
  for (const key in a) {
    count++;
    const x = a[key];
    const y = b[key];
    if (x === y || (Number.isNaN(x) && Number.isNaN(y))) continue;
    if (!(key in b) || typeof x !== 'object' || typeof y !== 'object' || x === null || y === null) return false;
    if (JSON.stringify(x) !== JSON.stringify(y)) return false;
  }
  for (const key in b) if (--count < 0 || !(key in a)) return false;
  return count === 0;
}
