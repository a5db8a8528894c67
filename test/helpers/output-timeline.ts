import type { SimulatedBoard } from '../../src/sim/simulated-board.js';
import { startGate, type Gate } from './in-process.js';

// What the simulated board's outputs did, sampled at the board itself after
// every write it served (never through iogate's API): the test's view of the
// relays, against which interlocks, dwell and cover positions are checked.

export interface OutputBit {
  name: string;
  register: number;
  bit: number;
  /** Index into the timeline's boards; 0 unless told. */
  board?: number;
}

export interface Sample {
  /** performance.now() when the board applied the write. */
  at: number;
  on: boolean[];
}

export class OutputTimeline {
  readonly samples: Sample[] = [];
  private readonly restores: Array<() => void> = [];
  private readonly boards: readonly SimulatedBoard[];

  constructor(
    boards: SimulatedBoard | readonly SimulatedBoard[],
    readonly outputs: readonly OutputBit[],
  ) {
    this.boards = Array.isArray(boards) ? boards : [boards as SimulatedBoard];
    for (const board of this.boards) {
      const writeCoils = board.writeCoils.bind(board);
      const writeRegisters = board.writeRegisters.bind(board);
      board.writeCoils = (address, values) => this.after(writeCoils(address, values));
      board.writeRegisters = (address, values) => this.after(writeRegisters(address, values));
      this.restores.push(() => {
        board.writeCoils = writeCoils;
        board.writeRegisters = writeRegisters;
      });
    }
    this.sample();
  }

  /** The outputs' states now, at the boards. */
  now(): boolean[] {
    return this.outputs.map(({ register, bit, board = 0 }) => ((this.boards[board]!.get('holding', register) >> bit) & 1) === 1);
  }

  isOn(name: string): boolean {
    return this.now()[this.index(name)]!;
  }

  index(name: string): number {
    const index = this.outputs.findIndex((output) => output.name === name);
    if (index < 0) throw new Error(`no output ${name} in the timeline`);
    return index;
  }

  stop(): void {
    for (const restore of this.restores) restore();
  }

  private after(result: boolean): boolean {
    this.sample();
    return result;
  }

  private sample(): void {
    const on = this.now();
    const last = this.samples.at(-1);
    if (last && last.on.every((value, i) => value === on[i])) return;
    this.samples.push({ at: performance.now(), on });
  }
}

/** Neuron brain board (`00`): DO i is bit i of register 1, LED i bit i of register 20. */
export const BRAIN_DO = (n: number): OutputBit => ({ name: `do/1_0${n}`, register: 1, bit: n - 1 });
export const BRAIN_LED = (n: number): OutputBit => ({ name: `led/1_0${n}`, register: 20, bit: n - 1 });
/** E-8DI8RO section (`01`) as device 2: relay i is bit i of register 1. */
export const RELAY_01 = (device: number, n: number, board: number): OutputBit => ({ name: `ro/${device}_0${n}`, register: 1, bit: n - 1, board });

export interface WatchedGate {
  gate: Gate;
  timeline: OutputTimeline;
  /** Stops the timeline, then the gate. */
  stop(): Promise<void>;
}

/** The daemon's parts in this process (in-process.ts's startGate) with a timeline of `outputs` at its board from the start. */
export async function startWatchedGate(yaml: string, outputs: readonly OutputBit[], options?: Parameters<typeof startGate>[1]): Promise<WatchedGate> {
  const gate = await startGate(yaml, options);
  const timeline = new OutputTimeline(gate.board, outputs);
  return {
    gate,
    timeline,
    async stop() {
      timeline.stop();
      await gate.close();
    },
  };
}
