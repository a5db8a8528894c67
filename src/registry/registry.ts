import type { Device, DeviceType } from '../devices/device.js';
import { RequestError } from './request-error.js';
import { validateAlias } from './alias-store.js';
import type { WriteControl } from './write.js';
import { REST_ALL_ORDER, canonicalType } from './type-names.js';

// Every API device by type and circuit, their aliases, and the pre-serialised
// body of `/rest/all`, rebuilt only after something changed.

const ALIAS_PREFIX = 'al_';

/** How long `/rest/all` may show a volatile device's text before it is made anew. */
const VOLATILE_REUSE_MS = 100;
/** Type lists whose `all` text is kept at once. */
const MAX_LISTINGS = 16;

export class Registry {
  private readonly byType = new Map<DeviceType, Map<string, Device>>();
  private readonly aliases = new Map<string, Device>();
  /**
   * `/rest/all` as encoded runs of ready JSON (brackets and commas included)
   * between runs of volatile devices, whose text must be made fresh for each
   * request. Built once per change, so a request encodes only the volatile
   * devices and copies the rest.
   */
  private allSegments: Array<Buffer | Device[]> | undefined;
  private allBody: readonly Buffer[] | undefined;
  private allBodyUntil = 0;
  /**
   * The WebSocket `all` reply by the type list it covers, made once per change
   * and shared by every client that asks (a flood of `all` then costs a
   * send, not a listing); volatile devices as in allJson.
   */
  private readonly listings = new Map<string, { text: Buffer; until: number }>();
  /** The control layer every write passes (interlocks, pulses, covers), once the runtime set it up. */
  writeControl: WriteControl | undefined;
  /** The Modbus buses by name: EVOK's `tcp_bus` objects, which clients can name but not read. */
  readonly modbusBuses = new Set<string>();
  /** Called after any alias change, to persist the table. */
  onAliasChange: (() => void) | undefined;

  add(device: Device): void {
    let circuits = this.byType.get(device.type);
    if (!circuits) this.byType.set(device.type, (circuits = new Map()));
    circuits.set(device.circuit, device);
    if (device.alias) this.aliases.set(device.alias, device);
    this.dropListing();
  }

  /** Takes a device out (its bus was removed or changed by a reload); its alias is the caller's to keep. */
  remove(device: Device): void {
    const circuits = this.byType.get(device.type);
    if (circuits?.get(device.circuit) !== device) return;
    circuits.delete(device.circuit);
    if (device.alias && this.aliases.get(device.alias) === device) this.aliases.delete(device.alias);
    this.dropListing();
  }

  typeOf(name: string): DeviceType {
    const type = canonicalType(name);
    if (type === undefined) throw new RequestError(404, 'KeyError', `'${name}'`);
    return type;
  }

  /** Devices of one type in registration order (empty for a known type with none). */
  list(typeName: string): Device[] {
    return [...(this.byType.get(this.typeOf(typeName))?.values() ?? [])];
  }

  /** The device with exactly this type and circuit (no alias lookup), if any. */
  find(type: DeviceType, circuit: string): Device | undefined {
    return this.byType.get(type)?.get(circuit);
  }

  /** `circuit` may be the circuit, an alias, or `al_<alias>`. */
  resolve(typeName: string, circuit: string): Device {
    const type = this.typeOf(typeName);
    const device = this.byType.get(type)?.get(circuit) ?? this.byAlias(circuit);
    if (!device) throw new RequestError(404, 'Exception', `Circuit or alias with name '${circuit}' not defined!`);
    if (device.type !== type) {
      // EVOK looked the device's type up in its table of alternate names: a
      // canonical name is not in it, so that lookup failed with a KeyError
      // naming the type; an alternate name got past it to the type check.
      if (typeName === type) throw new RequestError(404, 'KeyError', `'${typeName}'`);
      throw new RequestError(404, 'Exception', `Invalid device circuit '${circuit}' with devtype '${typeName}'`);
    }
    return device;
  }

  /** A point as the configuration names it: `type/circuit` (EVOK's alternate type names and `type/alias` too) or an alias; undefined if none. */
  byName(name: string): Device | undefined {
    const slash = name.indexOf('/');
    try {
      return slash > 0 ? this.resolve(name.slice(0, slash), name.slice(slash + 1)) : this.byAlias(name);
    } catch {
      return undefined;
    }
  }

  byAlias(name: string): Device | undefined {
    return this.aliases.get(name) ?? (name.startsWith(ALIAS_PREFIX) ? this.aliases.get(name.slice(ALIAS_PREFIX.length)) : undefined);
  }

  /** Check an alias request without applying it; returns the error text, if any. */
  aliasProblem(device: Device, alias: unknown): string | undefined {
    if (!device.aliasable) return `${device.type} devices cannot have an alias`;
    if (typeof alias !== 'string') return `Invalid alias ${JSON.stringify(alias)}`;
    if (alias === '') return undefined;
    const invalid = validateAlias(alias);
    if (invalid) return invalid;
    const owner = this.aliases.get(alias);
    if (owner && owner !== device) return `Duplicate alias ${alias}`;
    return undefined;
  }

  /**
   * Give `device` the alias `alias` ('' removes it). Call aliasProblem first,
   * and settle the device afterwards so its JSON shows the alias.
   */
  setAlias(device: Device, alias: string): void {
    if ((device.alias ?? '') === alias) return;
    if (device.alias) this.aliases.delete(device.alias);
    device.alias = alias || undefined;
    if (alias) this.aliases.set(alias, device);
    this.dropListing();
    this.onAliasChange?.();
  }

  aliasTable(): ReadonlyMap<string, Device> {
    return this.aliases;
  }

  /** Drop cached listings after devices changed. */
  invalidate(): void {
    this.dropListing();
  }

  /**
   * Body of `GET /rest/all`, in EVOK's type order, as chunks to write one
   * after the other. The volatile devices' text (`modbus_slave`, whose
   * `last_comm` ages by itself) is made anew at most every VOLATILE_REUSE_MS,
   * so a burst of requests shares it; the ready runs between them are the
   * same buffers until a device changes. Joining the chunks into one 56 KB
   * buffer every 100 ms kept external memory a mark-compact away from being
   * freed (bench: ~3 MB of such buffers under load), for no gain: the
   * socket takes the chunks in one write.
   */
  allJson(): readonly Buffer[] {
    if (this.allBody && (this.allBodyUntil === Infinity || performance.now() < this.allBodyUntil)) return this.allBody;
    const segments = (this.allSegments ??= this.buildAllSegments());
    if (segments.length === 1) {
      this.allBodyUntil = Infinity;
      return (this.allBody = segments as Buffer[]);
    }
    this.allBodyUntil = performance.now() + VOLATILE_REUSE_MS;
    return (this.allBody = segments.map((part) => (Buffer.isBuffer(part) ? part : Buffer.from(part.map((device) => device.json()).join(',')))));
  }

  /** A JSON list of every device of `types`, in that order (EVOK's WebSocket `all`), as UTF-8. */
  listingJson(types: readonly DeviceType[]): Buffer {
    const key = types.join(',');
    const now = performance.now();
    const cached = this.listings.get(key);
    if (cached && now < cached.until) return cached.text;
    const parts: string[] = [];
    let volatile = false;
    for (const type of types) {
      for (const device of this.byType.get(type)?.values() ?? []) {
        parts.push(device.json());
        volatile ||= device.volatile;
      }
    }
    // Filters are the clients' choice: a few lists in practice, a bounded number in any case.
    if (this.listings.size >= MAX_LISTINGS) this.listings.clear();
    const text = Buffer.from(`[${parts.join(',')}]`);
    this.listings.set(key, { text, until: volatile ? now + VOLATILE_REUSE_MS : Infinity });
    return text;
  }

  /** Every device in `/rest/all` order. */
  allInOrder(): Device[] {
    const devices: Device[] = [];
    for (const type of REST_ALL_ORDER) for (const device of this.byType.get(type)?.values() ?? []) devices.push(device);
    return devices;
  }

  private buildAllSegments(): Array<Buffer | Device[]> {
    const segments: Array<Buffer | Device[]> = [];
    let text = '[';
    /** The run of volatile devices being collected, if the last device was one. */
    let run: Device[] | undefined;
    let count = 0;
    for (const type of REST_ALL_ORDER) {
      for (const device of this.byType.get(type)?.values() ?? []) {
        const separator = count++ === 0 ? '' : ',';
        if (device.volatile) {
          if (!run) {
            segments.push(Buffer.from(text + separator));
            segments.push((run = []));
            text = '';
          }
          run.push(device);
        } else {
          text += separator + device.json();
          run = undefined;
        }
      }
    }
    segments.push(Buffer.from(text + ']'));
    return segments;
  }

  private dropListing(): void {
    this.allSegments = undefined;
    this.allBody = undefined;
    this.listings.clear();
  }

  devices(): IterableIterator<Device> {
    return this.iterate();
  }

  private *iterate(): IterableIterator<Device> {
    for (const circuits of this.byType.values()) yield* circuits.values();
  }
}
