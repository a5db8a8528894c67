// Turns the `model:` value of a config.yaml device into a board model.

import type { BoardModel } from './model.js';
import { builtinModels } from './builtin/index.js';

/**
 * The model name a config value means. Board ids are two-digit hex strings,
 * but YAML reads an unquoted `model: 00` as the integer 0 and `model: 08` as 8
 * (EVOK then fails with "Unsupported device model 0"); an integer is taken as
 * the zero-padded id when that id is a built-in board, else as its decimal
 * text. A user definition file named by a bare number must be quoted in config.
 */
export function modelName(raw: unknown): string {
  if (typeof raw === 'string') return raw;
  if (typeof raw === 'number' && Number.isFinite(raw)) {
    const padded = String(raw).padStart(2, '0');
    return Number.isInteger(raw) && raw >= 0 && builtinModels.has(padded) ? padded : String(raw);
  }
  throw new TypeError(`model must be a hw-definition name, got ${JSON.stringify(raw) ?? String(raw)}`);
}

/** User definitions win over built-ins of the same name, as files in EVOK's hw_definitions do. */
export function findModel(name: string, user: ReadonlyMap<string, BoardModel>): BoardModel | undefined {
  return user.get(name) ?? builtinModels.get(name);
}
