import type { AliasBook, AliasTarget } from '../devices/alias-manager.js';
import { RequestError } from './request-error.js';
import type { Device } from '../devices/device.js';
import type { AliasSaver } from './alias-store.js';
import type { Registry } from './registry.js';
import { canonicalType } from './type-names.js';

// The alias table as it is persisted: the aliases of existing devices (held by
// the registry) plus saved aliases whose device is not configured now. Those
// are kept and saved again, so a board that is missing for a while keeps its
// names; giving the name to another device drops the old entry.

export class PersistedAliases implements AliasBook {
  private readonly absent = new Map<string, AliasTarget>();

  constructor(
    private readonly registry: Registry,
    private readonly saver: AliasSaver,
  ) {}

  /**
   * Give loaded aliases to their devices, then start saving on every change.
   * Returns why entries had to be dropped.
   */
  attach(loaded: ReadonlyMap<string, AliasTarget>): string[] {
    const problems: string[] = [];
    for (const [name, target] of loaded) {
      const type = canonicalType(target.devtype);
      const device = type === undefined ? undefined : this.registry.find(type, target.circuit);
      if (!device) {
        this.absent.set(name, target);
        continue;
      }
      const problem =
        this.registry.aliasProblem(device, name) ?? (device.alias ? `the device already has the alias ${device.alias}` : undefined);
      if (problem) {
        problems.push(`alias ${name} (${target.devtype} ${target.circuit}) dropped: ${problem}`);
        continue;
      }
      this.registry.setAlias(device, name);
      device.refresh();
    }
    this.registry.onAliasChange = () => this.changed();
    return problems;
  }

  /**
   * A device registered after start-up (a 1-Wire sensor found on its bus)
   * takes the saved alias waiting for it. EVOK wrote DS2408-family circuits
   * with dots; those entries find their dot-less circuit here.
   */
  adopt(device: Device): void {
    for (const [name, target] of this.absent) {
      if (canonicalType(target.devtype) !== device.type) continue;
      if (target.circuit !== device.circuit && target.circuit.replace(/\./g, '') !== device.circuit) continue;
      if (device.alias || this.registry.aliasProblem(device, name)) continue;
      this.absent.delete(name);
      this.registry.setAlias(device, name);
      device.refresh();
      return;
    }
  }

  /**
   * A device leaves the registry (a reload removed or rebuilt its bus): its
   * alias waits, as a saved alias of an absent board does, for the device
   * that comes back with the same circuit.
   */
  release(device: Device): void {
    if (device.alias) this.absent.set(device.alias, { circuit: device.circuit, devtype: device.type });
  }

  entries(): Map<string, AliasTarget> {
    const entries = new Map<string, AliasTarget>();
    for (const [name, device] of this.registry.aliasTable()) entries.set(name, { circuit: device.circuit, devtype: device.type });
    for (const [name, target] of this.absent) if (!entries.has(name)) entries.set(name, target);
    return entries;
  }

  /** Saves now; a file that could not be written is an error for the client, never a success. */
  async saveNow(): Promise<void> {
    this.saver.markDirty(() => this.entries());
    try {
      await this.saver.flushOrThrow();
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      const full = code === 'ENOSPC' || code === 'EDQUOT' || code === 'EFBIG';
      throw new RequestError(full ? 507 : 500, 'OSError', `aliases not saved, the previous file is unchanged: ${(error as Error).message}`);
    }
  }

  /** Save soon after the last of a burst of changes; stop() flushes. */
  private changed(): void {
    for (const name of this.registry.aliasTable().keys()) this.absent.delete(name);
    this.saver.markDirty(() => this.entries());
  }
}
