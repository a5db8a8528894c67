// Turns the `model:` value of a config.yaml device into a board model: a
// board id or hw-definition name, or a Unipi product name that stands for a
// set of boards at consecutive slave ids.

import type { BusConfig, DeviceConfig } from '../config/types.js';
import type { Origin } from '../config/yaml-tree.js';
import { closeMatches } from '../text/close-matches.js';
import type { BoardModel } from './model.js';
import { builtinModels } from './builtin/index.js';
import { products } from './products.js';

/** User definitions win over built-ins of the same name, as files in EVOK's hw_definitions do. */
export function findModel(name: string, user: ReadonlyMap<string, BoardModel>): BoardModel | undefined {
  return user.get(name) ?? builtinModels.get(name);
}

/**
 * The boards a `model:` value stands for, as the daemon reads it: a board
 * model of that name, else a product's boards (one per slave id, from the
 * given one on); undefined when it is neither.
 */
export function boardsFor(name: string, user: ReadonlyMap<string, BoardModel>): BoardModel[] | undefined {
  const model = findModel(name, user);
  if (model !== undefined) return [model];
  const product = products.get(name);
  if (product === undefined) return undefined;
  const boards = product.boards.map((board) => findModel(board, user));
  return boards.every((board): board is BoardModel => board !== undefined) ? boards : undefined;
}

export interface ModelProblem {
  at: Origin | undefined;
  text: string;
}

/**
 * Replaces each device whose model is a product name (and not a board map of
 * that name) by one device per board: slave ids `slave-id`, +1, +2; names
 * `N`, `N+1`, `N+2` for a numeric device name (as Unipi's autogen numbers
 * the sections), otherwise `name`, `name_2`, `name_3`. Returns the clashes
 * this makes with other devices.
 */
export function expandProducts(buses: BusConfig[], user: ReadonlyMap<string, BoardModel>): ModelProblem[] {
  const problems: ModelProblem[] = [];
  const names = new Map<string, string>();
  for (const bus of buses) for (const device of bus.devices) names.set(device.name, bus.name);
  for (const bus of buses) {
    const ids = new Set(bus.devices.map((device) => device.slaveId));
    const expanded: DeviceConfig[] = [];
    for (const device of bus.devices) {
      const product = findModel(device.model, user) === undefined ? products.get(device.model) : undefined;
      if (product === undefined) {
        expanded.push(device);
        continue;
      }
      product.boards.forEach((board, index) => {
        const name = index === 0 ? device.name : /^\d+$/.test(device.name) ? String(Number(device.name) + index) : `${device.name}_${index + 1}`;
        const slaveId = device.slaveId + index;
        const where = `${device.modelAt}: ${product.name} is boards ${product.boards.join(', ')} at slave ids ${device.slaveId}..${device.slaveId + product.boards.length - 1}`;
        if (index > 0 && names.has(name)) problems.push({ at: device.modelOrigin, text: `${where}; its board ${index + 1} would be device '${name}', which is also a device on bus ${names.get(name)}` });
        if (index > 0 && ids.has(slaveId)) problems.push({ at: device.modelOrigin, text: `${where}; slave-id ${slaveId} is also another device's on this bus` });
        if (slaveId > 247) problems.push({ at: device.modelOrigin, text: `${where}; slave-id ${slaveId} is above 247` });
        names.set(name, bus.name);
        ids.add(slaveId);
        const section: DeviceConfig = { ...device, name, model: board, slaveId, product: product.name, partOf: `${product.name}, board ${index + 1} of ${product.boards.length}` };
        delete section.deviceInfo;
        // One device_info for the product, on its first board, as Unipi's autogen writes it.
        if (index === 0 && device.deviceInfo !== undefined) {
          section.deviceInfo = { ...device.deviceInfo, family: familyName(product.family, device.deviceInfo.family), model: product.name, board_count: product.boards.length };
        }
        expanded.push(section);
      });
    }
    bus.devices = expanded;
  }
  return problems;
}

/** The product's family unless device_info named one. */
function familyName(family: string, written: string): string {
  return written === 'unknown' ? family : written;
}

/**
 * One line per configured device whose model is neither built in, a product
 * nor among the user's hw definitions, with the names closest to it; EVOK only
 * logged this and ran without the board. A device without a model already has
 * its own problem line.
 */
export function unknownModelProblems(
  devices: ReadonlyArray<{ model: string; modelAt?: string }>,
  user: ReadonlyMap<string, BoardModel>,
): string[] {
  return devices
    .filter(({ model }) => model !== '' && findModel(model, user) === undefined && !products.has(model))
    .map(({ model, modelAt }) => {
      const close = closeMatches(model, [...builtinModels.keys(), ...products.keys(), ...user.keys()]);
      const hint = close.length > 0 ? `did you mean ${close.map((name) => `'${name}'`).join(' or ')}? ` : '';
      return `${modelAt ? `${modelAt}: ` : ''}no board model '${model}' (${hint}board ids: ${[...builtinModels.keys()].join(', ')}; products: ${[...products.keys()].join(', ')}` +
        `${user.size ? `; from hw_definitions: ${[...user.keys()].join(', ')}` : ''})`;
    });
}
