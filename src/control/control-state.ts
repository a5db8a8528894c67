import { join } from 'node:path';
import { CoalescingSaver } from '../state/coalescing-saver.js';
import { readJsonState, writeJsonState } from '../state/json-state.js';

// What the control layer must know after a restart, in `outputs.json` in the
// state directory: the pulses that were running (their outputs are switched
// off at start-up, fail safe) and each cover's last position and whether it
// was moving (a cover stopped by a crash mid-run has no position).

export interface SavedCover {
  position: number | null;
  tilt: number | null;
  moving: boolean;
}

export interface SavedControl {
  /** Output reference (`ro/1_01`) → Date.now() when its pulse was to end. */
  pulses: Record<string, number>;
  covers: Record<string, SavedCover>;
}

/** Changes to a cover at rest are coalesced; a pulse or a run starting is written before its output goes on. */
const SAVE_DELAY_MS = 500;

export class ControlState {
  /** The file as found at start-up. */
  readonly found: SavedControl;
  private readonly current: SavedControl = { pulses: {}, covers: {} };
  private readonly saver: CoalescingSaver<SavedControl>;

  constructor(
    stateDir: string,
    log: (message: string) => void,
  ) {
    const path = join(stateDir, 'outputs.json');
    const { data, warning } = readJsonState(path);
    if (warning) log(warning);
    this.found = parseSaved(data);
    this.saver = new CoalescingSaver(`output state to ${path}`, (value) => writeJsonState(path, value), SAVE_DELAY_MS, log);
  }

  /** When the running pulse of `output` was noted to end (Date.now()), if one is. */
  pulseOf(output: string): number | undefined {
    return this.current.pulses[output];
  }

  setPulse(output: string, until: number | undefined): void {
    if (this.current.pulses[output] === until) return;
    if (until === undefined) delete this.current.pulses[output];
    else this.current.pulses[output] = until;
    this.changed();
  }

  setCover(name: string, saved: SavedCover): void {
    this.current.covers[name] = saved;
    this.changed();
  }

  /**
   * Written now, before a pulse's output goes on: after a crash the restart
   * must find it, or the output would stay on. Rejects with the reason when
   * the file could not be written (logged too).
   */
  saveOrThrow(): Promise<void> {
    return this.saver.flushOrThrow();
  }

  /**
   * Written now, before a cover starts: after a crash the restart must find
   * it. A file that cannot be written is logged and the cover still moves
   * (its travel timer in memory still stops it); only the restart loses the note.
   */
  async saveNow(): Promise<void> {
    try {
      await this.saver.flushOrThrow();
    } catch {
      // logged by the saver
    }
  }

  flush(): Promise<void> {
    return this.saver.flush();
  }

  private changed(): void {
    this.saver.markDirty(() => structuredClone(this.current));
  }
}

function parseSaved(data: unknown): SavedControl {
  const saved: SavedControl = { pulses: {}, covers: {} };
  if (typeof data !== 'object' || data === null) return saved;
  const { pulses, covers } = data as Record<string, unknown>;
  if (typeof pulses === 'object' && pulses !== null) {
    for (const [key, until] of Object.entries(pulses)) if (typeof until === 'number') saved.pulses[key] = until;
  }
  if (typeof covers === 'object' && covers !== null) {
    for (const [name, entry] of Object.entries(covers)) {
      if (typeof entry !== 'object' || entry === null) continue;
      const { position, tilt, moving } = entry as Record<string, unknown>;
      saved.covers[name] = { position: percentOrNull(position), tilt: percentOrNull(tilt), moving: moving === true };
    }
  }
  return saved;
}

function percentOrNull(value: unknown): number | null {
  return typeof value === 'number' && value >= 0 && value <= 100 ? value : null;
}
