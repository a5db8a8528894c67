import { join } from 'node:path';
import { readJsonState, writeJsonState } from '../../state/json-state.js';

// bdSeq, the number that pairs an NDEATH with its NBIRTH, survives a restart:
// a host that saw bdSeq 7 die must see 8 born next, not 0 again. Each new
// CONNECT takes the next number, written atomically before the CONNECT goes
// out, so a crash right after it still leaves the number it used on disk.

export class BdSeqStore {
  readonly path: string;
  /** The number of the last CONNECT (undefined before the first ever). */
  private last: number | undefined;
  readonly warning: string | undefined;

  constructor(stateDir: string, edgeNodeKey: string) {
    this.path = join(stateDir, `sparkplug-${fileSafe(edgeNodeKey)}.bdseq.json`);
    const read = readJsonState(this.path);
    this.warning = read.warning;
    const saved = (read.data as { bdSeq?: unknown } | undefined)?.bdSeq;
    if (typeof saved === 'number' && Number.isInteger(saved) && saved >= 0 && saved <= 255) this.last = saved;
  }

  /**
   * The bdSeq for the next CONNECT, saved before it is returned. With
   * `reuse` (the last attempt never reached a broker, so no broker holds a
   * Will with its number) the last number is used again and nothing is
   * written: a dead broker retried for hours does not wear the SD card.
   */
  async next(reuse = false): Promise<number> {
    if (reuse && this.last !== undefined) return this.last;
    const value = this.last === undefined ? 0 : (this.last + 1) % 256;
    await writeJsonState(this.path, { bdSeq: value });
    this.last = value;
    return value;
  }
}

export function fileSafe(text: string): string {
  return text.replace(/[^A-Za-z0-9._-]/g, '_');
}
