// Turns the `model:` value of a config.yaml device into a board model.

import type { BoardModel } from './model.js';
import { builtinModels } from './builtin/index.js';

/** User definitions win over built-ins of the same name, as files in EVOK's hw_definitions do. */
export function findModel(name: string, user: ReadonlyMap<string, BoardModel>): BoardModel | undefined {
  return user.get(name) ?? builtinModels.get(name);
}

/**
 * One line per configured device whose model is neither built in nor among
 * the user's hw definitions; EVOK only logged this and ran without the board.
 */
export function unknownModelProblems(
  devices: ReadonlyArray<{ model: string; modelAt?: string }>,
  user: ReadonlyMap<string, BoardModel>,
): string[] {
  return devices
    .filter(({ model }) => findModel(model, user) === undefined)
    .map(
      ({ model, modelAt }) =>
        `${modelAt ? `${modelAt}: ` : ''}no board model '${model}' (built in: ${[...builtinModels.keys()].join(', ')}` +
        `${user.size ? `; from hw_definitions: ${[...user.keys()].join(', ')}` : ''})`,
    );
}
