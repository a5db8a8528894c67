// Building blocks shared by the built-in board tables. Unipi firmware lays out
// its boards by a few fixed conventions (watchdog coils, configuration area at
// 1008+, DirectSwitch registers right after the debounce registers); these
// helpers name those conventions once instead of repeating the numbers.

import type {
  AnalogMode,
  BoardModel,
  CoilActionFeature,
  DiFeature,
  Feature,
  RegisterBlock,
  RegisterFeature,
  RegisterSpace,
  WdFeature,
} from '../model.js';

export function block(start_reg: number, count: number, frequency: number, type: RegisterSpace = 'holding'): RegisterBlock {
  return { start_reg, count, frequency, type };
}

/**
 * A board with one REGISTER feature per polled holding block appended. The
 * current Unipi data files dropped the REGISTER features the earlier EVOK 3
 * files had; adding them back lets users read any polled register raw, as
 * before. Input blocks get none (their values are served as data points).
 */
export function boardWithRawRegisters(name: string, description: string, blocks: RegisterBlock[], features: Feature[]): BoardModel {
  const raw = blocks
    .filter((b) => b.type === 'holding')
    .map((b): RegisterFeature => ({ type: 'REGISTER', count: b.count, start_reg: b.start_reg }));
  return { name, description, blocks, features: [...features, ...raw] };
}

/** Every Unipi board with firmware ≥ 5.50 has the master watchdog and the save/reset coils at the same places. */
export function masterWatchdog(statusReg: number): WdFeature {
  return { type: 'WD', count: 1, val_reg: statusReg, timeout_reg: 1008, nv_sav_coil: 1003, reset_coil: 1002 };
}

export function nvSave(): CoilActionFeature {
  return { type: 'NV_SAVE', val_coil: 1003 };
}

/** Debounce registers of the first input group always start at 1010. */
const FIRST_DEBOUNCE_REG = 1010;

/**
 * Inputs that support DirectSwitch. The firmware keeps the three per-board
 * DirectSwitch bit masks (enable, polarity, toggle) in consecutive registers.
 */
export function directSwitchInputs(count: number, counterReg: number, directReg: number): DiFeature {
  return {
    type: 'DI',
    count,
    modes: ['Simple', 'DirectSwitch'],
    ds_modes: ['Simple', 'Inverted', 'Toggle'],
    val_reg: 0,
    counter_reg: counterReg,
    direct_reg: directReg,
    deboun_reg: FIRST_DEBOUNCE_REG,
    polar_reg: directReg + 1,
    toggle_reg: directReg + 2,
  };
}

/** Inputs without DirectSwitch, optionally a second group numbered on from the first. */
export function simpleInputs(
  count: number,
  valReg: number,
  counterReg: number,
  debounceReg: number,
  startIndex?: number,
): DiFeature {
  const inputs: DiFeature = { type: 'DI', count, modes: ['Simple'], val_reg: valReg, counter_reg: counterReg, deboun_reg: debounceReg };
  if (startIndex !== undefined) inputs.start_index = startIndex;
  return inputs;
}

/** The 4-channel analog input of the extension-style AI/AO sections (E-4AI4AO…, xS50, xS51). */
export function multiModeAnalogInputModes(): Record<string, AnalogMode> {
  return {
    Disabled: { value: 0 },
    Voltage: { value: 1, unit: 'V', range: [0, 10] },
    Voltage2V5: { value: 2, unit: 'V', range: [0, 2.5] },
    Current: { value: 3, unit: 'mA', range: [0, 20] },
    Resistance3W: { value: 4, unit: 'Ohm', range: [0, 1960] },
    Resistance2W: { value: 5, unit: 'Ohm', range: [0, 100000] },
  };
}

/** A fixed 0–10 V channel: a single mode without a selector value. */
export function voltageOnlyModes(): Record<string, AnalogMode> {
  return { Voltage: { unit: 'V', range: [0, 10] } };
}
