// Register maps of the Unipi extension modules (RS-485 slaves), named by
// product. Layouts follow Unipi's data files for EVOK 3 (firmware ≥ 5.50).

import type { BoardModel } from '../model.js';
import {
  block,
  boardWithRawRegisters,
  directSwitchInputs,
  masterWatchdog,
  multiModeAnalogInputModes,
  nvSave,
  simpleInputs,
  voltageOnlyModes,
} from './parts.js';

export const xS10: BoardModel = boardWithRawRegisters(
  'xS10',
  'Extension xS10: 16 DI, 8 relays, 4 user LEDs',
  [block(0, 3, 1), block(3, 32, 50), block(39, 1, 250), block(1008, 21, 250)],
  [
    directSwitchInputs(16, 3, 1026),
    { type: 'RO', count: 8, val_reg: 1, val_coil: 0 },
    { type: 'LED', count: 4, val_coil: 24, val_reg: 39 },
    masterWatchdog(2),
    nvSave(),
  ],
);

export const xS11: BoardModel = boardWithRawRegisters(
  'xS11',
  'Extension xS11: 12 DI, 13 relays, 3 user LEDs',
  [block(0, 3, 1), block(3, 24, 50), block(31, 1, 250), block(1008, 17, 250)],
  [
    directSwitchInputs(12, 3, 1022),
    { type: 'RO', count: 13, val_reg: 1, val_coil: 0 },
    { type: 'LED', count: 3, val_coil: 25, val_reg: 31 },
    masterWatchdog(2),
    nvSave(),
  ],
);

/** 24 inputs in two value registers (16 + 8 bits); the second group is numbered on from 17. */
export const xS30: BoardModel = boardWithRawRegisters(
  'xS30',
  'Extension xS30: 24 DI, 4 user LEDs',
  [block(0, 3, 1), block(3, 48, 50), block(51, 1, 250), block(1008, 26, 250)],
  [
    simpleInputs(16, 0, 3, 1010, 0),
    simpleInputs(8, 1, 35, 1026, 16),
    { type: 'LED', count: 4, val_coil: 24, val_reg: 51 },
    masterWatchdog(2),
    nvSave(),
  ],
);

export const xS40: BoardModel = boardWithRawRegisters(
  'xS40',
  'Extension xS40: 8 DI, 14 relays, 4 user LEDs',
  [block(0, 3, 1), block(3, 16, 50), block(23, 1, 250), block(1008, 13, 250)],
  [
    directSwitchInputs(8, 3, 1018),
    { type: 'RO', count: 14, val_reg: 1, val_coil: 0 },
    { type: 'LED', count: 4, val_coil: 22, val_reg: 23 },
    masterWatchdog(2),
    nvSave(),
  ],
);

export const xS50: BoardModel = boardWithRawRegisters(
  'xS50',
  'Extension xS50: 6 DI, 5 relays, 4 AI, 4 AO',
  [block(0, 2, 1), block(2, 12, 50), block(14, 1, 250), block(15, 12, 50), block(1008, 15, 250)],
  [
    directSwitchInputs(6, 15, 1016),
    { type: 'RO', count: 5, val_reg: 1, val_coil: 0 },
    { type: 'AI', count: 4, modes: multiModeAnalogInputModes(), val_reg: 6, mode_reg: 1019 },
    { type: 'AO', count: 4, modes: voltageOnlyModes(), val_reg: 2 },
    masterWatchdog(14),
    nvSave(),
  ],
);

export const xS51: BoardModel = boardWithRawRegisters(
  'xS51',
  'Extension xS51: 4 DI, 5 relays, 4 AI, 4 AO, 3 user LEDs',
  [block(0, 2, 1), block(2, 12, 50), block(14, 1, 250), block(15, 8, 50), block(27, 1, 250), block(1008, 15, 250)],
  [
    directSwitchInputs(4, 15, 1014),
    { type: 'RO', count: 5, val_reg: 1, val_coil: 0 },
    { type: 'AI', count: 4, modes: multiModeAnalogInputModes(), val_reg: 6, mode_reg: 1019 },
    { type: 'AO', count: 4, modes: voltageOnlyModes(), val_reg: 2 },
    { type: 'LED', count: 3, val_coil: 9, val_reg: 27 },
    masterWatchdog(14),
    nvSave(),
  ],
);

/**
 * Eight DS18B20 channels as signed hundredths of a degree, with one validity
 * bit per channel in register 9. The configuration area (1010+) is polled so
 * it can be read as raw registers.
 */
export const xG18: BoardModel = boardWithRawRegisters(
  'xG18',
  'Extension xG18: 1-Wire to Modbus gateway, 8 single-sensor DS18B20 channels',
  [block(1, 9, 100), block(1010, 8, 250)],
  [
    {
      type: 'DATA_POINT',
      name: 'temperature',
      count: 8,
      value_reg: 1,
      valid_mask_reg: 9,
      offset: 0,
      factor: 0.01,
      datatype: 'signed16',
      unit: '°C',
    },
  ],
);

export const extensionModules: BoardModel[] = [xS10, xS11, xS30, xS40, xS50, xS51, xG18];
