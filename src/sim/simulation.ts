import type { BoardModel } from '../boards/model.js';
import { runInputPattern, stepInputs } from './input-pattern.js';
import { SimulatedBoard } from './simulated-board.js';

// The simulated boards of one line and the clock that moves their inputs.

export class Simulation {
  readonly boards = new Map<number, SimulatedBoard>();
  private stopPattern: (() => void) | undefined;

  constructor(
    slaves: ReadonlyArray<{ unit: number; model: BoardModel }>,
    private readonly toggleMs: number,
  ) {
    for (const { unit, model } of slaves) {
      const board = new SimulatedBoard(model);
      // Step 0 of the pattern is the state after power-on: inputs off, analog values mid-range.
      stepInputs(board, 0);
      this.boards.set(unit, board);
    }
  }

  start(): void {
    this.stopPattern ??= runInputPattern([...this.boards.values()], this.toggleMs);
  }

  stop(): void {
    this.stopPattern?.();
    this.stopPattern = undefined;
  }
}
