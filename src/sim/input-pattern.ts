import type { DiFeature } from '../boards/model.js';
import { stepAnalog } from './analog-pattern.js';
import type { SimulatedBoard } from './simulated-board.js';

// Makes a simulated board's digital inputs move, so change-driven features
// have something to see: the inputs of each DI feature count in binary, one
// step per period (input 1 toggles every period, input 2 every second one …),
// and each rising edge bumps that input's counter as the firmware would.
// Measured values (analog inputs, sensors) drift along with it.

export function stepInputs(board: SimulatedBoard, step: number): void {
  for (const feature of board.model.features) {
    if (feature.type === 'DI') stepFeature(board, feature, step);
  }
  stepAnalog(board, step);
}

function stepFeature(board: SimulatedBoard, feature: DiFeature, step: number): void {
  for (let i = 0; i < feature.count; i++) {
    const bit = i % 16;
    const on = Math.floor(step / 2 ** i) % 2 === 1;
    const was = ((board.get('holding', feature.val_reg) >> bit) & 1) === 1;
    if (on === was) continue;
    board.setBit(feature.val_reg, bit, on);
    board.logInput(feature.val_reg, bit, on);
    if (on) bumpCounter(board, feature.counter_reg + 2 * i);
  }
}

function bumpCounter(board: SimulatedBoard, address: number): void {
  const value = (board.get('holding', address) + board.get('holding', address + 1) * 65536 + 1) % 2 ** 32;
  board.set('holding', address, value & 0xffff);
  board.set('holding', address + 1, Math.floor(value / 65536));
}

/** Steps the pattern every `periodMs`; returns a stop function. */
export function runInputPattern(boards: readonly SimulatedBoard[], periodMs: number): () => void {
  if (periodMs <= 0) return () => {};
  let step = 0;
  const timer = setInterval(() => {
    step++;
    for (const board of boards) stepInputs(board, step);
  }, periodMs);
  timer.unref();
  return () => clearInterval(timer);
}
