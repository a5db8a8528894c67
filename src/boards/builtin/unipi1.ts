// Register maps served by unipi-one-modbus, the Modbus front end of the
// original Unipi 1.0/1.1 (a Raspberry Pi shield without its own firmware), and
// of the EMO-R8 relay card attached to it. There is no watchdog or NV memory.

import type { BoardModel } from '../model.js';
import { block, boardWithRawRegisters, simpleInputs, voltageOnlyModes } from './parts.js';

export const unipi11: BoardModel = boardWithRawRegisters(
  'UNIPI11',
  'Unipi 1.0 / 1.1: 12 DI, 8 relays, 2 AI, 1 AO',
  [block(0, 31, 1), block(1010, 15, 10)],
  [
    { type: 'AO', count: 1, modes: voltageOnlyModes(), val_reg: 2 },
    { type: 'AI', count: 2, modes: voltageOnlyModes(), val_reg: 3 },
    { type: 'RO', count: 8, val_reg: 1, val_coil: 0 },
    simpleInputs(12, 0, 7, 1010),
  ],
);

export const unipi11Lite: BoardModel = boardWithRawRegisters(
  'UNIPI11LITE',
  'Unipi 1.1 Lite: 6 DI, 6 relays',
  [block(0, 14, 1), block(1010, 6, 10)],
  [{ type: 'RO', count: 6, val_reg: 1, val_coil: 0 }, simpleInputs(6, 0, 2, 1010)],
);

export const emoR8: BoardModel = boardWithRawRegisters(
  'EMO-R8',
  'EMO-R8 relay card for Unipi 1.x: 8 relays',
  [block(1, 1, 1)],
  [{ type: 'RO', count: 8, val_reg: 1, val_coil: 0 }],
);

export const unipiOneBoards: BoardModel[] = [unipi11, unipi11Lite, emoR8];
