import type { BoardModel } from '../boards/model.js';
import { circuitName } from '../devices/build.js';
import type { Config } from '../config/types.js';
import { canonicalType } from '../registry/type-names.js';

// What `--check-config`, start-up and a reload check of the points the
// automations name, from the configuration and the board models alone
// (nothing is opened): each `type/circuit` of a numbered channel (di, do,
// ro, led, ai, ao) must exist on a configured board, outputs must be
// outputs, covers must be configured. Aliases, 1-Wire sensors and raw
// registers are known only once the daemon runs: the engine shows an
// automation naming an unknown one as waiting.

const CHANNELS: Readonly<Record<string, string>> = { DI: 'di', DO: 'do', RO: 'ro', LED: 'led', AI: 'ai', AO: 'ao', BAO: 'ao', WD: 'watchdog' };
const SWITCHABLE = new Set(['do', 'ro', 'led']);
const WRITABLE = new Set(['do', 'ro', 'led', 'ao']);

/** The numbered channels the configured boards provide, as `type/circuit`. */
export function knownChannels(config: Config, findModel: (name: string) => BoardModel | undefined): Set<string> {
  const known = new Set<string>();
  for (const bus of config.buses) {
    for (const device of bus.devices) {
      known.add(`modbus_slave/${device.name}`);
      const model = findModel(device.model);
      for (const feature of model?.features ?? []) {
        const type = CHANNELS[feature.type];
        if (type === undefined || !('count' in feature)) continue;
        const start = 'start_index' in feature ? (feature.start_index ?? 0) : 0;
        for (let i = 0; i < feature.count; i++) known.add(`${type}/${circuitName(device.name, i + 1 + start)}`);
      }
    }
  }
  return known;
}

export function automationReferenceProblems(config: Config, findModel: (name: string) => BoardModel | undefined): string[] {
  const known = knownChannels(config, findModel);
  const covers = new Set(config.covers.map((cover) => cover.name));
  const problems: string[] = [];
  for (const automation of config.automations) {
    const say = (where: string, text: string) => problems.push(`${automation.where}: automations.${automation.id}.${where}: ${text}`);
    const check = (where: string, ref: string, need: 'any' | 'switchable' | 'writable') => {
      const slash = ref.indexOf('/');
      if (slash < 0) return; // an alias: resolved when the daemon runs
      const type = canonicalType(ref.slice(0, slash));
      if (type === undefined) return say(where, `'${ref}': no device type '${ref.slice(0, slash)}'`);
      const name = `${type}/${ref.slice(slash + 1)}`;
      const numbered = Object.values(CHANNELS).includes(type) || type === 'modbus_slave';
      if (numbered && !known.has(name)) return say(where, `'${ref}': no such ${type} on the configured boards`);
      if (need === 'switchable' && !SWITCHABLE.has(type)) say(where, `'${ref}' is a ${type}; only do, ro and led outputs can be switched here`);
      if (need === 'writable' && !WRITABLE.has(type)) say(where, `'${ref}' is a ${type}; only do, ro, led and ao outputs can be set`);
    };
    const { trigger } = automation;
    if ('input' in trigger) check('when.input', trigger.input, 'any');
    automation.conditions.forEach((condition) => 'input' in condition && check('if.input', condition.input, 'any'));
    for (const action of automation.actions) {
      if (action.kind === 'cover' && !covers.has(action.cover)) say('then', `no cover '${action.cover}' (covers: ${[...covers].join(', ') || 'none configured'})`);
      if (!('outputs' in action)) continue;
      const need = action.kind === 'set' ? 'writable' : 'switchable';
      for (const ref of action.outputs) check('then.output', ref, need);
    }
  }
  return problems;
}

