import type { BoardModel } from '../boards/model.js';
import { OutputCatalogue, type PointUse } from '../config/output-references.js';
import type { Config } from '../config/types.js';

// What `--check-config`, start-up and a reload check of the points the
// automations name, through the one resolver every section uses
// (src/config/output-references.ts): from the configuration, the board models
// and the alias file (nothing is opened). A `type/circuit` of a board's
// channel must exist, an alias in the file must name a point of the right
// type, outputs must be outputs, covers must be configured. 1-Wire sensors,
// raw registers and aliases not yet given are known only once the daemon
// runs: the engine shows an automation naming an unknown one as waiting.

const ANY_POINT: PointUse = { types: 'any', only: '' };
const SWITCHABLE: PointUse = { types: new Set(['do', 'ro', 'led']), only: 'only do, ro and led outputs can be switched here' };
const WRITABLE: PointUse = { types: new Set(['do', 'ro', 'led', 'ao']), only: 'only do, ro, led and ao outputs can be set' };

export function automationReferenceProblems(config: Config, findModel: (name: string) => BoardModel | undefined, catalogue = OutputCatalogue.of(config, findModel)): string[] {
  const covers = new Set(config.covers.map((cover) => cover.name));
  const problems: string[] = [];
  for (const automation of config.automations) {
    const say = (where: string, text: string) => problems.push(`${automation.where}: automations.${automation.id}.${where}: ${text}`);
    const check = (where: string, ref: string, use: PointUse) => {
      const found = catalogue.resolve(ref, use, 'later');
      if (typeof found === 'string') say(where, found);
    };
    const { trigger } = automation;
    if ('input' in trigger) check('when.input', trigger.input, ANY_POINT);
    automation.conditions.forEach((condition) => 'input' in condition && check('if.input', condition.input, ANY_POINT));
    for (const action of automation.actions) {
      if (action.kind === 'cover' && !covers.has(action.cover)) say('then', `no cover '${action.cover}' (covers: ${[...covers].join(', ') || 'none configured'})`);
      if (!('outputs' in action)) continue;
      for (const ref of action.outputs) check('then.output', ref, action.kind === 'set' ? WRITABLE : SWITCHABLE);
    }
  }
  return problems;
}
