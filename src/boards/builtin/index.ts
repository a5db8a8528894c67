// Every built-in board model by the name `model:` uses in config.yaml.

import type { BoardModel } from '../model.js';
import { customModbusDevice } from './custom.js';
import { extensionModules } from './extensions.js';
import { iaqSensors } from './iaq.js';
import { neuronSections } from './neuron.js';
import { unipiOneBoards } from './unipi1.js';

export const builtinModels: ReadonlyMap<string, BoardModel> = new Map(
  [...neuronSections, ...extensionModules, ...iaqSensors, ...unipiOneBoards, customModbusDevice].map((m) => [m.name, m]),
);
