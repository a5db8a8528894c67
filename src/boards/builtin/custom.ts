// EVOK's stock example of a third-party slave: nothing but raw registers, read
// at three different rates. Kept as a built-in so configurations that name it
// keep working, and as the simplest model to copy for a real device.

import type { BoardModel } from '../model.js';
import { block } from './parts.js';

export const customModbusDevice: BoardModel = {
  name: 'CUSTOM_MODBUS_DEVICE',
  description: 'Generic Modbus slave (example): raw holding registers 0–9 and 500–515',
  blocks: [block(0, 10, 1), block(500, 8, 10), block(508, 8, 50)],
  features: [
    { type: 'REGISTER', count: 10, start_reg: 0 },
    { type: 'REGISTER', count: 8, start_reg: 500 },
    { type: 'REGISTER', count: 8, start_reg: 508 },
  ],
};
