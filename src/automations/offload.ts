// The seam to the boards' DirectSwitch: rules of the shape the firmware can
// run itself (one DI → follow, inverted or toggle of one output on the same
// board) are handed over at start-up and at every reload, with the full list
// each time. Where the firmware took a rule, the engine does not run it too.
// The implementation is injected; without one, nothing is offloaded.

export type OffloadMode = 'follow' | 'inverted' | 'toggle';

export interface OffloadRequest {
  id: string;
  input: string;
  output: string;
  mode: OffloadMode;
}

export interface OffloadResult {
  id: string;
  offloaded: boolean;
  reason?: string;
}

/** Called with every `offload: firmware` rule (an empty list clears what an earlier call set up). */
export type FirmwareOffload = (requests: OffloadRequest[]) => Promise<OffloadResult[]>;

export const NO_FIRMWARE_OFFLOAD: FirmwareOffload = async (requests) =>
  requests.map(({ id }) => ({ id, offloaded: false, reason: 'firmware offload not available' }));
