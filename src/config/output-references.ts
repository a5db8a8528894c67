// The points a configuration names (the outputs of covers and interlocks, the
// inputs and outputs of automations), resolved as start-up will resolve them,
// but without building a device or opening a bus: from the boards' models and
// the alias file. `--check-config`, the package's switch from EVOK and a
// reload then refuse what start-up would refuse (exit 78, which the unit does
// not retry). One resolver for every section, aliases included.
import type { BoardModel, Feature } from '../boards/model.js';
import { circuitName } from '../devices/build.js';
import type { DeviceType } from '../devices/device.js';
import { readAliasFile, validateAlias } from '../registry/alias-store.js';
import { canonicalType } from '../registry/type-names.js';
import type { Config } from './types.js';

/** One output named in the configuration: as written, and the key path it was written at. */
export interface OutputReference {
  /** `type/circuit` (`ro/1_01`, `relay/1_01`) or an alias. */
  name: string;
  /** `covers.blind.up`, `interlocks[0]`: where, for the message. */
  where: string;
}

/** A device of a configured board, by its API type and circuit. */
export interface CatalogueDevice {
  type: DeviceType;
  circuit: string;
}

/** What a section needs of a point: the types it accepts, and what it says of any other. */
export interface PointUse {
  types: ReadonlySet<DeviceType> | 'any';
  /** `only do, ro and led outputs can be interlocked or drive a cover` */
  only: string;
}

/** The types the control layer switches; any other device cannot be interlocked or drive a cover. */
const OUTPUT_TYPES: ReadonlySet<DeviceType> = new Set<DeviceType>(['do', 'ro', 'led']);
export const CONTROLLED_OUTPUT: PointUse = { types: OUTPUT_TYPES, only: 'only do, ro and led outputs can be interlocked or drive a cover' };

/** API type of the numbered devices a board feature makes (src/devices/build.ts). */
const NUMBERED_TYPES: Readonly<Partial<Record<Feature['type'], DeviceType>>> = {
  DI: 'di', DO: 'do', RO: 'ro', LED: 'led', WD: 'watchdog', AI: 'ai', AO: 'ao', BAO: 'ao',
};

/** Types whose every device the boards' models list; any other (1-Wire sensors, raw registers) is known only once the daemon runs. */
const LISTED_TYPES: ReadonlySet<DeviceType> = new Set<DeviceType>([...Object.values(NUMBERED_TYPES), 'modbus_slave']);

const ALIAS_PREFIX = 'al_';

/** The configured boards' devices and their saved aliases, as the registry will hold them at start-up. */
export class OutputCatalogue {
  private readonly byKey = new Map<string, CatalogueDevice>();
  /** Read on the first lookup by alias, so a check without one reads no alias file. */
  private aliases: Map<string, CatalogueDevice> | undefined;
  private aliasFile: string | undefined;

  /**
   * From the buses' devices (product names already expanded to their boards)
   * and the alias file. A device a model cannot be found for is left out: its
   * own problem line says so.
   */
  static of(config: Config, findModel: (name: string) => BoardModel | undefined): OutputCatalogue {
    const catalogue = new OutputCatalogue();
    for (const device of config.buses.flatMap((bus) => bus.devices)) {
      const model = findModel(device.model);
      if (model === undefined) continue;
      for (const feature of model.features) {
        const type = NUMBERED_TYPES[feature.type];
        if (type === undefined || !('count' in feature)) continue;
        const start = 'start_index' in feature ? feature.start_index ?? 0 : 0;
        for (let i = 0; i < feature.count; i++) catalogue.add({ type, circuit: circuitName(device.name, i + 1 + start) });
      }
      catalogue.add({ type: 'modbus_slave', circuit: device.name });
    }
    catalogue.aliasFile = config.aliasFile;
    return catalogue;
  }

  add(device: CatalogueDevice): void {
    this.byKey.set(`${device.type}/${device.circuit}`, device);
  }

  /**
   * As the registry resolves a name (src/control/output.ts, the automation
   * engine): the device, or the problem as text. A point of a type the
   * models do not list (a 1-Wire sensor, a register) is taken as written,
   * its type still checked. `unknownAlias: 'later'` lets an alias the file
   * does not hold through as undefined: a section that binds late (the
   * automations) waits for it to be given.
   */
  resolve(name: string, use: PointUse = CONTROLLED_OUTPUT, unknownAlias: 'refuse' | 'later' = 'refuse'): CatalogueDevice | string | undefined {
    let device: CatalogueDevice | undefined;
    const slash = name.indexOf('/');
    if (slash > 0) {
      const typeName = name.slice(0, slash);
      const circuit = name.slice(slash + 1);
      const type = canonicalType(typeName);
      if (type === undefined) return `'${name}': '${typeName}' is not a device type`;
      device = this.byKey.get(`${type}/${circuit}`) ?? this.byAlias(circuit);
      if (device === undefined && !LISTED_TYPES.has(type)) device = this.runtimeDevice(type, circuit);
      if (device === undefined) return `'${name}': no ${type} ${circuit} on the configured boards, nor an alias of that name`;
      if (device.type !== type) return `'${name}': '${circuit}' is a ${device.type}, not a ${type}`;
    } else {
      device = this.byAlias(name);
      if (device === undefined && unknownAlias === 'later') return undefined;
      if (device === undefined) return `'${name}' is neither type/circuit (e.g. ro/1_01) nor a known alias`;
    }
    if (use.types !== 'any' && !use.types.has(device.type)) return `'${name}' is a ${device.type}; ${use.only}`;
    return device;
  }

  private byAlias(name: string): CatalogueDevice | undefined {
    const aliases = (this.aliases ??= this.readAliases());
    return aliases.get(name) ?? (name.startsWith(ALIAS_PREFIX) ? aliases.get(name.slice(ALIAS_PREFIX.length)) : undefined);
  }

  private readonly runtimeDevices = new Map<string, CatalogueDevice>();

  /** One object per runtime-only device, so "the first alias a device gets wins" holds for them too. */
  private runtimeDevice(type: DeviceType, circuit: string): CatalogueDevice {
    const key = `${type}/${circuit}`;
    let device = this.runtimeDevices.get(key);
    if (device === undefined) this.runtimeDevices.set(key, (device = { type, circuit }));
    return device;
  }

  /**
   * As start-up attaches them: to a device that exists, the first alias a
   * device gets wins. Without side effects: a check writes nothing.
   */
  private readAliases(): Map<string, CatalogueDevice> {
    const aliases = new Map<string, CatalogueDevice>();
    if (this.aliasFile === undefined) return aliases;
    const named = new Set<CatalogueDevice>();
    for (const [alias, target] of readAliasFile(this.aliasFile, { keepCopy: false }).aliases) {
      const type = canonicalType(target.devtype);
      // A sensor's or register's alias names a device the daemon finds once it runs.
      const device = type === undefined ? undefined : this.byKey.get(`${type}/${target.circuit}`) ?? (LISTED_TYPES.has(type) ? undefined : this.runtimeDevice(type, target.circuit));
      if (device === undefined || named.has(device) || validateAlias(alias) !== undefined) continue;
      named.add(device);
      aliases.set(alias, device);
    }
    return aliases;
  }
}

/**
 * Resolves each reference; the outputs in the same order (undefined where a
 * reference names none) and one `where: problem` line per unresolved one.
 * The resolution every section that names outputs goes through.
 */
export function resolveOutputReferences(
  catalogue: OutputCatalogue,
  references: readonly OutputReference[],
): { outputs: Array<CatalogueDevice | undefined>; problems: string[] } {
  const problems: string[] = [];
  const outputs = references.map(({ name, where }) => {
    const found = catalogue.resolve(name);
    if (found === undefined) return undefined;
    if (typeof found === 'string') {
      problems.push(`${where}: ${found}`);
      return undefined;
    }
    return found;
  });
  return { outputs, problems };
}

/**
 * What start-up refuses in `interlocks:` and `covers:` (src/control/
 * output-control.ts): an output that does not exist, and an output that
 * drives two covers (each cover would move the other). An output in a cover
 * and in an interlock as well is allowed: both rules apply to it.
 */
export function controlOutputProblems(config: Config, catalogue: OutputCatalogue): string[] {
  const problems: string[] = [];
  for (const interlock of config.interlocks) {
    problems.push(...resolveOutputReferences(catalogue, interlock.outputs.map((name) => ({ name, where: interlock.where }))).problems);
  }
  const coverOf = new Map<CatalogueDevice, string>();
  for (const cover of config.covers) {
    const { outputs, problems: unresolved } = resolveOutputReferences(catalogue, [
      { name: cover.up, where: `covers.${cover.name}.up` },
      { name: cover.down, where: `covers.${cover.name}.down` },
    ]);
    problems.push(...unresolved);
    const [up, down] = outputs;
    if (up === undefined || down === undefined) continue;
    if (up === down) problems.push(`covers.${cover.name}: up and down are both ${up.type} ${up.circuit} (written '${cover.up}' and '${cover.down}')`);
    for (const output of up === down ? [up] : [up, down]) {
      const owner = coverOf.get(output);
      if (owner !== undefined) problems.push(`covers.${cover.name}: ${output.type} ${output.circuit} already drives cover ${owner}`);
    }
    coverOf.set(up, cover.name);
    coverOf.set(down, cover.name);
  }
  return problems;
}
