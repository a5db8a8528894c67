import {
  coilWriteEffects,
  registerWriteEffects,
  type DirectSwitchSetting,
  type OutputChannel,
  type OutputEffect,
} from '../boards/output-writes.js';
import type { Device } from './device.js';
import { bitOf } from './digital/bits.js';
import type { SlaveUnit } from './slave/slave-unit.js';

// A raw write (a `register` device, a DI's DirectSwitch mode, later a Modbus
// TCP server's FC5/6/15/16) turned into the outputs it moves, as devices, each
// with the write that carries its move out. The control layer decides on these
// as on any output write (interlocks, covers, pulses), so a raw path cannot
// switch what the rules guard. The register map's side of it is
// src/boards/output-writes.ts.

export interface OutputMove {
  /** A do, ro or led. */
  output: Device;
  /** `value`: its on/off state (coil or mirror bit); `duty`: a DO's PWM duty register. */
  kind: 'value' | 'duty';
  /** Energised after the write (a duty above 0, or a DO whose value bit stays on). */
  on: boolean;
  /** Carries this move out on the wire: the output's own `value` write, or the duty register's raw write. */
  write: () => Promise<void>;
}

/** A write that leaves `input` in DirectSwitch mode switching `output` by itself (newly, or differently). */
export interface DirectSwitchHandover {
  input: Device;
  output: Device;
  setting: DirectSwitchSetting;
}

export interface OutputMoves {
  moves: OutputMove[];
  handovers: DirectSwitchHandover[];
}

/** Devices whose writes may move outputs they do not name: raw registers, DirectSwitch inputs. */
export interface MovesOutputs {
  /** The outputs `params` would move; undefined when none (or when the write is invalid: its own validation will say so). */
  outputMoves(params: Readonly<Record<string, unknown>>): OutputMoves | undefined;
}

export function outputMovesOf(device: Device, params: Readonly<Record<string, unknown>>): OutputMoves | undefined {
  const candidate = device as Partial<MovesOutputs>;
  return typeof candidate.outputMoves === 'function' ? candidate.outputMoves(params) : undefined;
}

/**
 * Which outputs of `slave` a write of holding registers (FC6, FC16) moves,
 * and to what, as devices. Registers that mirror no output give no move: the
 * caller writes those as they are.
 */
export function registerWriteMoves(slave: SlaveUnit, address: number, values: readonly number[]): OutputMoves {
  return movesOf(slave, registerWriteEffects(slave.model, address, values));
}

/** Which outputs of `slave` a write of coils (FC5, FC15) moves. */
export function coilWriteMoves(slave: SlaveUnit, address: number, values: readonly boolean[]): OutputMoves {
  return movesOf(slave, coilWriteEffects(slave.model, address, values));
}

function channelDevice(slave: SlaveUnit, channel: OutputChannel | undefined): Device | undefined {
  return channel && slave.channels.get(channel.feature)?.[channel.index];
}

function movesOf(slave: SlaveUnit, effects: readonly OutputEffect[]): OutputMoves {
  const found: OutputMoves = { moves: [], handovers: [] };
  for (const effect of effects) {
    const output = channelDevice(slave, effect.output);
    if (!output) continue;
    switch (effect.kind) {
      case 'value':
        found.moves.push({ output, kind: 'value', on: effect.on, write: output.prepareWrite({ value: effect.on ? 1 : 0 }) });
        break;
      case 'duty': {
        // PWM at 0 leaves a DO on whose value bit is set.
        const on = effect.raw > 0 || bitOf(slave.cache, effect.output.feature.val_reg, effect.output.index) === 1;
        found.moves.push({ output, kind: 'duty', on, write: () => slave.writeRegister(effect.address, effect.raw) });
        break;
      }
      case 'direct-switch': {
        const input = slave.channels.get(effect.input)?.[effect.index];
        if (!input) continue;
        const bit = (address: number) => bitOf(slave.cache, address, effect.index);
        // Enabling hands the output over; polarity or toggle changed while enabled (or unknown) changes how.
        const hands =
          effect.setting === 'enable'
            ? effect.set
            : bit(effect.input.direct_reg!) !== 0 && bit(effect.address) !== (effect.set ? 1 : 0);
        if (hands) found.handovers.push({ input, output, setting: effect.setting });
        break;
      }
    }
  }
  return found;
}
