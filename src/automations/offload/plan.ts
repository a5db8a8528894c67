import type { BoardModel, DiFeature, Feature } from '../../boards/model.js';
import { directSwitchOutput, hasDirectSwitch } from '../../boards/output-writes.js';

// Decides, from the boards' register maps alone, which rules the firmware can
// carry out itself, and why not for the others. No bus traffic here.

// The request and answer types are the engine's seam (../offload.ts).
import type { OffloadMode, OffloadRequest, OffloadResult } from '../offload.js';
export type { OffloadMode, OffloadRequest, OffloadResult } from '../offload.js';

/** A device of a board, as the runtime resolves a rule's input or output name. */
export interface BoardPoint {
  /** Board (Modbus slave) name. */
  board: string;
  model: BoardModel;
  feature: Feature;
  /** Channel index within `feature`, 0-based. */
  index: number;
}

/** One input handed to the firmware: the bits to set in its board's masks. */
export interface PlannedSwitch {
  request: OffloadRequest;
  board: string;
  input: DiFeature;
  bit: number;
  inverted: boolean;
  toggle: boolean;
}

export interface OffloadPlan {
  accepted: PlannedSwitch[];
  refused: OffloadResult[];
}

/** The EVOK `ds_mode` each rule mode is. */
const DS_MODE: Record<OffloadMode, string> = { follow: 'Simple', inverted: 'Inverted', toggle: 'Toggle' };

export interface PlanContext {
  locate(name: string): BoardPoint | undefined;
  /** Why the output may not be switched behind the control layer's back (an interlock, a cover), or undefined. */
  guard(output: string): string | undefined;
}

export function planOffload(context: PlanContext, requests: readonly OffloadRequest[]): OffloadPlan {
  const accepted: PlannedSwitch[] = [];
  const refused: OffloadResult[] = [];
  const byInput = new Map<string, string>();
  for (const request of requests) {
    const reason = refusal(context, request, byInput);
    if (typeof reason === 'string') refused.push({ id: request.id, offloaded: false, reason });
    else {
      accepted.push(reason);
      byInput.set(`${reason.board}@${reason.input.direct_reg}:${reason.bit}`, request.id);
    }
  }
  return { accepted, refused };
}

function refusal(context: PlanContext, request: OffloadRequest, byInput: ReadonlyMap<string, string>): PlannedSwitch | string {
  const { input: inputName, output: outputName, mode } = request;
  if (!Object.hasOwn(DS_MODE, mode)) {
    return `the firmware can only follow, invert or toggle on an input (mode '${String(mode)}'); edge, press, threshold or timed triggers stay with iogate`;
  }
  const input = context.locate(inputName);
  if (!input) return `input ${inputName} is not a device iogate knows`;
  if (input.feature.type !== 'DI') return `${inputName} is not a digital input`;
  const output = context.locate(outputName);
  if (!output) return `output ${outputName} is not a device iogate knows`;
  if (output.feature.type !== 'DO' && output.feature.type !== 'RO') return `${outputName} is not a digital or relay output`;
  if (input.board !== output.board) {
    return `${inputName} and ${outputName} are on different boards (${input.board}, ${output.board}); the firmware switches only its own board's outputs`;
  }
  if (!hasDirectSwitch(input.feature)) {
    return `the register map of board ${input.board} (model ${input.model.name}) has no DirectSwitch registers for ${inputName}`;
  }
  if (input.index >= 16) return `${inputName} has no bit in the 16-bit DirectSwitch masks`;
  const dsMode = DS_MODE[mode];
  if (!(input.feature.ds_modes ?? ['Simple']).includes(dsMode)) {
    return `the register map of board ${input.board} offers no DirectSwitch mode ${dsMode} for ${inputName}`;
  }
  const paired = directSwitchOutput(input.model, input.feature, input.index);
  if (!paired) return `${inputName} drives no output in DirectSwitch mode`;
  if (paired.feature !== output.feature || paired.index !== output.index) {
    return `${inputName}'s DirectSwitch drives only its paired output (channel ${paired.index + 1} of the board's first ${paired.feature.type} group), not ${outputName}`;
  }
  const guarded = context.guard(outputName);
  if (guarded) return `${outputName} ${guarded}; the firmware would switch it past that rule`;
  const key = `${input.board}@${input.feature.direct_reg}:${input.index}`;
  const other = byInput.get(key);
  if (other !== undefined) return `${inputName} is already offloaded by rule ${other}`;
  return { request, board: input.board, input: input.feature, bit: input.index, inverted: mode === 'inverted', toggle: mode === 'toggle' };
}
