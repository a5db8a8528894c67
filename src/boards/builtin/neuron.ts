// Register maps of the Neuron and Patron sections, named by the board id the
// firmware reports (what Unipi's autogen writes as `model:`). A product is one
// to three of these sections, each its own Modbus slave: e.g. an L533 is
// 00 + 13 + 13. Layouts follow Unipi's data files for EVOK 3 (firmware ≥ 5.50).

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

export const brain00: BoardModel = boardWithRawRegisters(
  '00',
  'Brain section: 4 DI, 4 DO (PWM), 1 AI, 1 AO, 4 user LEDs, 1-Wire power — first section of every Neuron ' +
    '(S103 … L533) and of Patron S107, S117, S167, M207, M267, M527, M567, L207, L527',
  [block(0, 2, 1), block(6, 1, 250), block(8, 12, 50), block(20, 1, 250), block(1008, 17, 250), block(3000, 6, 50)],
  [
    directSwitchInputs(4, 8, 1014),
    {
      type: 'DO',
      count: 4,
      modes: ['Simple', 'PWM'],
      val_reg: 1,
      val_coil: 0,
      pwm_reg: 16,
      pwm_ps_reg: 1017,
      pwm_c_reg: 1018,
    },
    {
      type: 'AI',
      count: 1,
      modes: {
        Voltage: { value: 0, unit: 'V', range: [0, 10] },
        Current: { value: 1, unit: 'mA', range: [0, 20] },
      },
      val_reg: 3002,
      mode_reg: 1024,
    },
    { type: 'BAO', count: 1, val_reg: 3000, res_val_reg: 3004, mode_reg: 1019 },
    { type: 'LED', count: 4, val_coil: 8, val_reg: 20 },
    { type: 'OWPOWER', val_coil: 1001 },
    masterWatchdog(6),
    nvSave(),
  ],
);

export const e8di8ro01: BoardModel = boardWithRawRegisters(
  '01',
  'E-8DI8RO section: 8 DI, 8 relays — Neuron M103, Patron S207, S227',
  [block(0, 3, 1), block(3, 16, 50), block(1008, 13, 250)],
  [directSwitchInputs(8, 3, 1018), { type: 'RO', count: 8, val_reg: 1, val_coil: 0 }, masterWatchdog(2), nvSave()],
);

/**
 * 28 relays spread over two value registers (16 + 12 bits) but numbered as one
 * run of coils. The second group's start_index continues the numbering, so the
 * circuits are _01…_28 without overlap (EVOK ignores start_index on RO and
 * loses the first group, EVOK#195; we honour it).
 */
export const e14ro14ro07: BoardModel = boardWithRawRegisters(
  '07',
  'E-14RO14RO section: 28 relays — Neuron M403, L403',
  [block(0, 3, 1), block(1008, 1, 500)],
  [
    { type: 'RO', count: 16, val_reg: 0, val_coil: 0, start_index: 0 },
    { type: 'RO', count: 12, val_reg: 1, val_coil: 16, start_index: 16 },
    masterWatchdog(2),
    nvSave(),
  ],
);

export const e16di14ro08: BoardModel = boardWithRawRegisters(
  '08',
  'E-16DI14RO section: 16 DI, 14 relays — Neuron M203, L203, L523, Patron M207, M267, L207, L527',
  [block(0, 3, 1), block(3, 32, 50), block(1008, 21, 250)],
  [directSwitchInputs(16, 3, 1026), { type: 'RO', count: 14, val_reg: 1, val_coil: 0 }, masterWatchdog(2), nvSave()],
);

export const e14di14ro09: BoardModel = boardWithRawRegisters(
  '09',
  'E-14DI14RO section: 14 DI, 14 relays — Neuron L503',
  [block(0, 3, 1), block(3, 28, 50), block(1008, 19, 250)],
  [directSwitchInputs(14, 3, 1024), { type: 'RO', count: 14, val_reg: 1, val_coil: 0 }, masterWatchdog(2), nvSave()],
);

/**
 * 30 inputs in two value registers (16 + 14 bits), the second group numbered
 * on from 17. The first block reads 3 registers, not 2 as Unipi's file does:
 * the watchdog status sits in register 2 and would otherwise never be polled.
 */
export const e16di14di0A: BoardModel = boardWithRawRegisters(
  '0A',
  'E-16DI14DI section: 30 DI — Neuron M303, L303',
  [block(0, 3, 1), block(3, 60, 50), block(1008, 32, 250)],
  [simpleInputs(16, 0, 3, 1010, 0), simpleInputs(14, 1, 35, 1026, 16), masterWatchdog(2), nvSave()],
);

export const e4ai4ao6di5ro0F: BoardModel = boardWithRawRegisters(
  '0F',
  'E-4AI4AO6DI5RO section: 6 DI, 5 relays, 4 AI, 4 AO — Neuron M503, L503, L513',
  [block(0, 2, 1), block(2, 12, 50), block(14, 1, 250), block(16, 12, 50), block(1008, 15, 250)],
  [
    directSwitchInputs(6, 16, 1016),
    { type: 'RO', count: 5, val_reg: 1, val_coil: 0 },
    { type: 'AI', count: 4, modes: multiModeAnalogInputModes(), val_reg: 6, mode_reg: 1019 },
    { type: 'AO', count: 4, modes: voltageOnlyModes(), val_reg: 2 },
    masterWatchdog(14),
    nvSave(),
  ],
);

/**
 * The DirectSwitch registers start at 1014, right after the four debounce
 * registers. An earlier EVOK 3 file said 1016, which is 0F's layout (six
 * debounce registers); the current Unipi file agrees with 1014.
 */
export const e4ai4ao4di5ro13: BoardModel = boardWithRawRegisters(
  '13',
  'E-4AI4AO4DI5RO section: 4 DI, 5 relays, 4 AI, 4 AO — Neuron M523, L523, L533, Patron M527, M567, L527',
  [block(0, 2, 1), block(2, 12, 50), block(14, 1, 250), block(16, 8, 50), block(1008, 15, 250)],
  [
    directSwitchInputs(4, 16, 1014),
    { type: 'RO', count: 5, val_reg: 1, val_coil: 0 },
    { type: 'AI', count: 4, modes: multiModeAnalogInputModes(), val_reg: 6, mode_reg: 1019 },
    { type: 'AO', count: 4, modes: voltageOnlyModes(), val_reg: 2 },
    masterWatchdog(14),
    nvSave(),
  ],
);

export const neuronSections: BoardModel[] = [
  brain00,
  e8di8ro01,
  e14ro14ro07,
  e16di14ro08,
  e14di14ro09,
  e16di14di0A,
  e4ai4ao6di5ro0F,
  e4ai4ao4di5ro13,
];
