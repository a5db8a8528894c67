// Everything start-up validates, in one place, without opening a port or a
// bus: the file itself, board models (hw definitions and product names), bus
// conflicts, the outputs covers and interlocks name, and the bind policy. Start-up, `--check-config` and a reload all
// go through it, so a configuration that passes the check is one the daemon
// accepts.
import { realpathSync } from 'node:fs';
import { bindPolicyProblem, modbusServerBindProblem } from '../api/access/bind-policy.js';
import { isLoopbackListenAddress } from '../api/access/loopback.js';
import { loadHwDefinitionDir } from '../boards/hwdef.js';
import type { BoardModel } from '../boards/model.js';
import { expandProducts, findModel, unknownModelProblems } from '../boards/resolve.js';
import { loadConfig, type CheckProblem, type LoadOptions } from '../config/load.js';
import { controlOutputProblems, OutputCatalogue } from '../config/output-references.js';
import type { Config } from '../config/types.js';

export interface CheckedConfig {
  config: Config;
  warnings: string[];
  /** Board models by name: the user's hw definitions over the built-ins. */
  findModel(name: string): BoardModel | undefined;
}

export interface CheckOptions extends Omit<LoadOptions, 'check'> {
  /**
   * The configuration is about to replace a running EVOK, which listens on
   * every address: it must say where iogate listens, so that remote clients
   * are not cut off without anyone deciding it.
   */
  replacingEvok?: boolean;
}

/** Throws ConfigError with one line per problem, all of them in one pass. */
export function readCheckedConfig(options: CheckOptions): CheckedConfig {
  const userModels = new Map<string, BoardModel>();
  const loaded = loadConfig({
    ...options,
    check: (config) => {
      const warnings: string[] = [];
      for (const dir of config.hwDefinitionDirs) {
        const found = loadHwDefinitionDir(dir);
        for (const [name, model] of found.models) userModels.set(name, model);
        warnings.push(...found.warnings);
      }
      const problems: CheckProblem[] = [...expandProducts(config.buses, userModels), ...serialPortClashes(config)];
      for (const device of config.buses.flatMap((bus) => bus.devices)) {
        for (const text of unknownModelProblems([device], userModels)) problems.push({ at: device.modelOrigin, text });
      }
      // After the products are expanded to their boards: the outputs those boards have.
      const catalogue = OutputCatalogue.of(config, (name) => findModel(name, userModels));
      for (const text of controlOutputProblems(config, catalogue)) problems.push({ at: undefined, text });
      // Where to listen comes last: it is about the file as a whole.
      const unsafeBind = bindPolicyProblem(config.apis);
      if (unsafeBind !== undefined) problems.push({ at: undefined, text: unsafeBind });
      const unsafeModbus = modbusServerBindProblem(config.apis);
      if (unsafeModbus !== undefined) problems.push({ at: undefined, text: unsafeModbus });
      if (options.replacingEvok && options.overrides?.address === undefined && config.apis.addressWritten !== true) {
        problems.push({ at: undefined, text: evokListenProblem(config) });
      }
      return { problems, warnings };
    },
  });
  return { ...loaded, findModel: (name) => findModel(name, userModels) };
}

/**
 * EVOK listened on every address of the controller; without `apis.address`
 * iogate listens on loopback only. Switching over would silently cut off every
 * client on the network.
 */
function evokListenProblem(config: Config): string {
  const { port, address } = config.apis;
  const where = isLoopbackListenAddress(address) ? `${address} (this controller only)` : address;
  return [
    `EVOK answers on every address at port ${port}; with this configuration (no apis.address) iogate would answer on ${where}: clients on the network would lose access.`,
    `Either serve the network: apis.address: 0.0.0.0 with apis.auth.tokens (or apis.auth.allow_anonymous: true, open as EVOK was),`,
    `or confirm this controller only: apis.address: 127.0.0.1 (nginx or a tunnel in front).`,
  ].join('\n  ');
}

/** Two RTU buses on one serial line would both be masters of it. */
function serialPortClashes(config: Config): CheckProblem[] {
  const byDevice = new Map<string, string>();
  const problems: CheckProblem[] = [];
  for (const bus of config.buses) {
    if (bus.type !== 'MODBUSRTU') continue;
    const device = canonicalPath(bus.port);
    const other = byDevice.get(device);
    if (other !== undefined) problems.push({ at: undefined, text: `comm_channels.${bus.name}.port: ${bus.port} is also bus ${other}'s serial line: two masters on one line corrupt each other's frames` });
    else byDevice.set(device, bus.name);
  }
  return problems;
}

function canonicalPath(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}
