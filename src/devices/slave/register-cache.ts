import type { RegisterBlock, RegisterSpace } from '../../boards/model.js';
import { blockOf } from '../../boards/regmap.js';

// The last values read from one slave, block by block. Every GET is answered
// from here; nothing on the request path touches the bus.

interface CachedBlock {
  readonly def: RegisterBlock;
  readonly values: Uint16Array;
  /** Per register, the number of the last patch (confirmed write) that set it; 0 for none. */
  readonly patchedBy: Float64Array;
  valid: boolean;
  /** performance.now() of the last successful read; 0 before the first (ages run on the monotonic clock). */
  readAt: number;
}

export class RegisterCache {
  readonly blocks: readonly CachedBlock[];
  private readonly layout: { blocks: readonly RegisterBlock[] };
  /** Patches applied so far: a read asked for before patch n cannot know its value. */
  private patches = 0;

  constructor(defs: readonly RegisterBlock[]) {
    this.blocks = defs.map((def) => ({ def, values: new Uint16Array(def.count), patchedBy: new Float64Array(def.count), valid: false, readAt: 0 }));
    this.layout = { blocks: defs };
  }

  /** Index of the first block of `space` holding [address, address + count), or -1. */
  blockIndexOf(space: RegisterSpace, address: number, count = 1): number {
    return blockOf(this.layout, space, address, count);
  }

  covers(space: RegisterSpace, address: number, count = 1): boolean {
    return this.blockIndexOf(space, address, count) >= 0;
  }

  /** A register's value, or null when its block has not been read yet or it is in no block. */
  get(space: RegisterSpace, address: number): number | null {
    const index = this.blockIndexOf(space, address);
    if (index < 0) return null;
    const block = this.blocks[index]!;
    return block.valid ? block.values[address - block.def.start_reg]! : null;
  }

  /**
   * `count` consecutive registers from one snapshot, or null. Multi-register
   * values must come from a single block read, or a value could mix two polls.
   */
  getRun(space: RegisterSpace, address: number, count: number): Uint16Array | null {
    const index = this.blockIndexOf(space, address, count);
    if (index < 0) return null;
    const block = this.blocks[index]!;
    if (!block.valid) return null;
    const offset = address - block.def.start_reg;
    return block.values.subarray(offset, offset + count);
  }

  /** Taken when a read is asked for, and given back to store() with its reply. */
  mark(): number {
    return this.patches;
  }

  /**
   * Keep a block's fresh read, found at `offset` in `registers` (a read may
   * cover several blocks). Returns whether anything differs from what was
   * cached (always true for the first read), so callers re-decode devices only
   * when a poll brought news, which most polls do not. A register patched by
   * a write confirmed after the read was asked for (`since`, from mark())
   * keeps the patched value: the read may have reached the slave before the
   * write, and its reply, handled after the write's, would put the old state
   * back (a relay shown off while it is on) until the next poll.
   */
  store(blockIndex: number, registers: readonly number[], offset = 0, readAt = performance.now(), since = Infinity): boolean {
    const block = this.blocks[blockIndex]!;
    const { values, patchedBy } = block;
    let changed = !block.valid;
    for (let i = 0; i < values.length; i++) {
      if (patchedBy[i]! > since) continue;
      const value = registers[offset + i]!;
      if (values[i] !== value) {
        values[i] = value;
        changed = true;
      }
    }
    block.valid = true;
    block.readAt = readAt;
    return changed;
  }

  /**
   * Milliseconds since the least recently read of the blocks read most often
   * (those a scan reads every time, normally); null until each was read once.
   * Blocks read every few hundred scans (configuration) would make any slave
   * look stale.
   */
  stalestAgeMs(now = performance.now()): number | null {
    let frequency = Infinity;
    for (const block of this.blocks) frequency = Math.min(frequency, block.def.frequency);
    let oldest = Infinity;
    for (const block of this.blocks) {
      if (block.def.frequency !== frequency) continue;
      if (!block.valid) return null;
      oldest = Math.min(oldest, block.readAt);
    }
    return oldest === Infinity ? null : now - oldest;
  }

  /**
   * Apply a write the slave has confirmed, so replies show the new state at
   * once. Calls `touched` with the index of each block it changed a value in.
   */
  patch(space: RegisterSpace, address: number, values: readonly number[], touched?: (blockIndex: number) => void): void {
    const patch = ++this.patches;
    this.blocks.forEach((block, index) => {
      const { start_reg, count, type } = block.def;
      if (type !== space || !block.valid) return;
      for (let i = 0; i < values.length; i++) {
        const offset = address + i - start_reg;
        if (offset >= 0 && offset < count) {
          block.values[offset] = values[i]!;
          block.patchedBy[offset] = patch;
          touched?.(index);
        }
      }
    });
  }
}
