import type { AiFeature, BaoFeature, DataPointFeature } from '../boards/model.js';
import { float32Words } from '../devices/digital/bits.js';
import type { SimulatedBoard } from './simulated-board.js';

// Makes a simulated board's measured values drift slowly, as real sensors do:
// each channel follows its own slow sine inside a plausible range, written in
// the encoding the firmware uses (float32 low word first for analog inputs,
// the data point's datatype for sensors). Step 0 gives the power-on values.

const STEPS_PER_CYCLE = 60;

function wave(step: number, channel: number): number {
  return Math.sin((2 * Math.PI * step) / STEPS_PER_CYCLE + channel);
}

export function stepAnalog(board: SimulatedBoard, step: number): void {
  for (const feature of board.model.features) {
    if (feature.type === 'AI') stepAnalogInput(board, feature, step);
    else if (feature.type === 'BAO') stepResistance(board, feature, step);
    else if (feature.type === 'DATA_POINT') stepDataPoint(board, feature, step);
  }
}

function stepAnalogInput(board: SimulatedBoard, feature: AiFeature, step: number): void {
  for (let i = 0; i < feature.count; i++) {
    const mode = activeModeOf(board, feature, i);
    // Modes with their own encoding are left alone rather than filled with the wrong one.
    if (mode === undefined || mode.transformation !== undefined) continue;
    const [low, high] = mode.range ?? [0, 10];
    const value = low + (high - low) * (0.5 + 0.4 * wave(step, i));
    writeFloat(board, 'holding', feature.val_reg + 2 * i, value, true);
  }
}

function activeModeOf(board: SimulatedBoard, feature: AiFeature, index: number) {
  const modes = Object.values(feature.modes);
  if (feature.mode_reg === undefined) return modes[0];
  const selector = board.get('holding', feature.mode_reg + index);
  return modes.find((mode) => mode.value === selector);
}

/** In Resistance mode the Brain output measures; the reading wanders around 1 kΩ. */
function stepResistance(board: SimulatedBoard, feature: BaoFeature, step: number): void {
  for (let i = 0; i < feature.count; i++) {
    writeFloat(board, 'holding', feature.res_val_reg + 2 * i, 1000 + 200 * wave(step, i), true);
  }
}

function stepDataPoint(board: SimulatedBoard, feature: DataPointFeature, step: number): void {
  const space = feature.reg_type ?? 'holding';
  const { factor = 1, offset = 0 } = feature;
  for (let i = 0; i < feature.count; i++) {
    const address = feature.value_reg + i;
    // Around 10 with a swing of 15, so signed values go below zero now and then.
    const value = 10 + 15 * wave(step, i);
    switch (feature.datatype ?? 'signed16') {
      case 'float32':
        writeFloat(board, space, address, value, false);
        break;
      case 'signed16':
        board.set(space, address, Math.round((value - offset) / factor) & 0xffff);
        break;
      case 'unsigned16':
        board.set(space, address, Math.max(0, Math.round((value - offset) / factor)) & 0xffff);
        break;
    }
  }
  if (feature.valid_mask_reg !== undefined) board.set(space, feature.valid_mask_reg, (1 << feature.count) - 1);
}

function writeFloat(board: SimulatedBoard, space: 'holding' | 'input', address: number, value: number, lowFirst: boolean): void {
  const [first, second] = float32Words(value, lowFirst);
  board.set(space, address, first);
  board.set(space, address + 1, second);
}
