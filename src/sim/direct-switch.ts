import type { BoardModel, DiFeature } from '../boards/model.js';
import { directSwitchOutput, hasDirectSwitch } from '../boards/output-writes.js';

// The firmware's DirectSwitch, as the simulator plays it: an input whose bit is
// set in the enable mask switches its paired output (output-writes.ts's
// directSwitchOutput) by itself, with no master on the line.
//
// - Simple (polarity 0, toggle 0): the output follows the input.
// - Inverted (polarity 1): the output is the input's opposite.
// - Toggle (toggle 1, polarity 0): each rising edge of the input flips the output.
//
// Assumptions, since the reference (EVOK's data files and API) says only which
// bits select the modes:
// - The firmware acts on the debounced input, the very state it reports in the
//   input's value register; the simulator's inputs (pattern, control endpoint)
//   are set as that debounced state, so the output moves with the value
//   register's edge and no further delay is added.
// - Follow and Inverted act on each input edge, and once when the mode is
//   switched on (the output takes the input's level at once); Toggle acts on
//   rising edges only.
// - A Modbus write to the output (its coil or value register) still lands; the
//   next input edge overrides it. Nothing in the reference says the firmware
//   locks the output, so the simulator does not.

interface Watched {
  input: DiFeature;
  /** Output channel's value register and bit, per input index. */
  outputs: Array<{ reg: number; bit: number } | undefined>;
}

export interface DirectSwitchBoard {
  get(space: 'holding', address: number): number;
  setBit(address: number, bit: number, on: boolean): void;
}

export class DirectSwitchFirmware {
  private readonly watched: Watched[] = [];

  constructor(model: BoardModel) {
    for (const feature of model.features) {
      if (feature.type !== 'DI' || !hasDirectSwitch(feature)) continue;
      const outputs = Array.from({ length: Math.min(feature.count, 16) }, (_, index) => {
        const channel = directSwitchOutput(model, feature, index);
        return channel && { reg: channel.feature.val_reg, bit: channel.index % 16 };
      });
      this.watched.push({ input: feature, outputs });
    }
  }

  /** A holding register went from `before` to `after`; the firmware reacts to input edges and to its masks being set. */
  changed(board: DirectSwitchBoard, address: number, before: number, after: number): void {
    if (before === after) return;
    for (const { input, outputs } of this.watched) {
      if (address === input.val_reg) {
        const enable = board.get('holding', input.direct_reg!);
        outputs.forEach((output, index) => {
          const mask = 1 << index;
          if (!output || !(enable & mask) || !((before ^ after) & mask)) return;
          this.drive(board, input, index, output, (after & mask) !== 0, (before & mask) === 0);
        });
      } else if (address === input.direct_reg || address === input.polar_reg || address === input.toggle_reg) {
        // Switching DirectSwitch (or its polarity) on sets a level mode's output to its level at once.
        const enable = board.get('holding', input.direct_reg!);
        const level = board.get('holding', input.val_reg);
        const inverted = board.get('holding', input.polar_reg!);
        const toggle = board.get('holding', input.toggle_reg!);
        outputs.forEach((output, index) => {
          const mask = 1 << index;
          if (!output || !(enable & mask) || !((before ^ after) & mask)) return;
          if (toggle & mask && !(inverted & mask)) return;
          this.drive(board, input, index, output, (level & mask) !== 0, false);
        });
      }
    }
  }

  private drive(board: DirectSwitchBoard, input: DiFeature, index: number, output: { reg: number; bit: number }, on: boolean, rising: boolean): void {
    const mask = 1 << index;
    const inverted = (board.get('holding', input.polar_reg!) & mask) !== 0;
    const toggle = (board.get('holding', input.toggle_reg!) & mask) !== 0;
    if (toggle && !inverted) {
      if (rising && on) board.setBit(output.reg, output.bit, ((board.get('holding', output.reg) >> output.bit) & 1) === 0);
      return;
    }
    board.setBit(output.reg, output.bit, inverted ? !on : on);
  }
}
