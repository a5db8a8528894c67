// What a raw Modbus write does to a board's outputs, read from its register
// map alone. Unipi firmware mirrors every relay, DO and LED as a bit of a
// holding register that can be written as well as read, keeps a DO's PWM duty
// in a register of its own, and lets a DirectSwitch input switch an output by
// itself. So a write of registers or coils may move outputs without naming
// them; whoever takes raw writes (the `register` device, a Modbus TCP server
// in front of the boards) asks here which outputs move, and to what, so the
// writes can go through the control layer's rules like any output write.

import type { BoardModel, DiFeature, DoFeature, LedFeature, RoFeature } from './model.js';

export type OutputFeature = DoFeature | RoFeature | LedFeature;

/** Channel `index` (0-based within its feature) of an output feature. */
export interface OutputChannel {
  feature: OutputFeature;
  index: number;
}

export type OutputEffect =
  /** The output's on/off state (its coil, or its bit in the mirroring value register) becomes `on`. */
  | { kind: 'value'; address: number; output: OutputChannel; on: boolean }
  /** A DO's PWM duty register gets `raw` (above 0 energises the output). */
  | { kind: 'duty'; address: number; output: OutputChannel; raw: number }
  /**
   * One of the DirectSwitch settings of input `index` of `input` becomes
   * `set`: `enable` hands `output` to the input (the firmware switches it by
   * itself), `polarity` and `toggle` change how it does so.
   */
  | { kind: 'direct-switch'; address: number; setting: DirectSwitchSetting; input: DiFeature; index: number; set: boolean; output: OutputChannel | undefined };

export type DirectSwitchSetting = 'enable' | 'polarity' | 'toggle';

function isOutputFeature(feature: BoardModel['features'][number]): feature is OutputFeature {
  return feature.type === 'DO' || feature.type === 'RO' || feature.type === 'LED';
}

/** Whether the input has the three DirectSwitch registers (EVOK uses them only then). */
export function hasDirectSwitch(input: DiFeature): boolean {
  return input.modes.includes('DirectSwitch') && input.direct_reg !== undefined && input.polar_reg !== undefined && input.toggle_reg !== undefined;
}

/**
 * The output a DirectSwitch input drives: the board's first DO or RO group,
 * same channel number (DI 1 → DO 1 on a brain section, DI 3 → RO 3 on a relay
 * section). Inputs beyond the outputs' count (DI 15 and 16 of a 16-input,
 * 14-relay section) drive nothing.
 */
export function directSwitchOutput(model: BoardModel, input: DiFeature, index: number): OutputChannel | undefined {
  if (!hasDirectSwitch(input)) return undefined;
  const outputs = model.features.find((feature): feature is DoFeature | RoFeature => feature.type === 'DO' || feature.type === 'RO');
  return outputs && index < outputs.count ? { feature: outputs, index } : undefined;
}

/**
 * Every output effect of writing `values` to the holding registers from
 * `address` on (FC6 is one value, FC16 several). A value register yields one
 * `value` effect per channel it mirrors (a write sets all its bits at once);
 * registers that mirror no output yield nothing.
 */
export function registerWriteEffects(model: BoardModel, address: number, values: readonly number[]): OutputEffect[] {
  const effects: OutputEffect[] = [];
  values.forEach((word, offset) => {
    const at = address + offset;
    for (const feature of model.features) {
      if (isOutputFeature(feature)) {
        if (feature.val_reg === at) {
          for (let index = 0; index < feature.count; index++) {
            effects.push({ kind: 'value', address: at, output: { feature, index }, on: ((word >> index % 16) & 1) === 1 });
          }
        }
        if (feature.type === 'DO' && at >= feature.pwm_reg && at < feature.pwm_reg + feature.count) {
          effects.push({ kind: 'duty', address: at, output: { feature, index: at - feature.pwm_reg }, raw: word });
        }
      } else if (feature.type === 'DI' && hasDirectSwitch(feature)) {
        const setting: DirectSwitchSetting | undefined =
          at === feature.direct_reg ? 'enable' : at === feature.polar_reg ? 'polarity' : at === feature.toggle_reg ? 'toggle' : undefined;
        if (setting === undefined) continue;
        for (let index = 0; index < Math.min(feature.count, 16); index++) {
          effects.push({ kind: 'direct-switch', address: at, setting, input: feature, index, set: ((word >> index) & 1) === 1, output: directSwitchOutput(model, feature, index) });
        }
      }
    }
  });
  return effects;
}

/** The output effects of writing coils from `address` on (FC5 one, FC15 several); action coils (NV save, watchdog reset, 1-Wire power) move no output. */
export function coilWriteEffects(model: BoardModel, address: number, values: readonly boolean[]): OutputEffect[] {
  const effects: OutputEffect[] = [];
  values.forEach((on, offset) => {
    const coil = address + offset;
    for (const feature of model.features) {
      if (isOutputFeature(feature) && coil >= feature.val_coil && coil < feature.val_coil + feature.count) {
        effects.push({ kind: 'value', address: coil, output: { feature, index: coil - feature.val_coil }, on });
      }
    }
  });
  return effects;
}
