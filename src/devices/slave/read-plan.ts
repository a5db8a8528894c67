import type { RegisterBlock } from '../../boards/model.js';
import { MAX_READ_REGISTERS, type ModbusRequest } from '../../modbus/pdu.js';

// What one slave's scans put on the line. A model's register map is a list of
// blocks, each read on every N-th scan; blocks that are due in the same scan
// and sit back to back in the same register space go out as one request (a
// real board serves every register inside its blocks, and a request that
// covers two adjacent blocks reads exactly their registers). That keeps the
// freshness of each block and saves a round trip per merge: on RS485 a
// transaction is several ms of line time, however short the reply.
//
// The reads of each scan are worked out once per combination of due blocks
// and kept, so a scan allocates no plan. A slave that answers a merged read
// with an exception (a map that claims registers the firmware does not serve)
// gets those blocks read one by one from then on, as before the merge.

export interface PlannedRead {
  readonly request: ModbusRequest & { fc: 3 | 4 };
  /** Indices of the blocks the reply fills, in address order, and where each starts in the reply. */
  readonly blocks: readonly number[];
  readonly offsets: readonly number[];
}

/** Above this many distinct block frequencies the due sets are not cached (no built-in map has more than three). */
const MAX_CACHED_FREQUENCIES = 12;

export class ReadPlan {
  /** Every block, merged where allowed: the first pass of a slave and its probes while offline. */
  private allReads: readonly PlannedRead[];
  private readonly frequencies: number[];
  private readonly byDueSet = new Map<number, readonly PlannedRead[]>();
  /** Blocks a slave refused as part of a merged read: always read alone. */
  private readonly alone = new Set<number>();

  constructor(private readonly blocks: readonly RegisterBlock[]) {
    this.frequencies = [...new Set(blocks.map((block) => block.frequency))].sort((a, b) => a - b);
    this.allReads = this.build(blocks.map((_, index) => index));
  }

  /** The reads of scan number `scan` (0, 1, …); `all` for a first pass or a probe. */
  due(scan: number, all = false): readonly PlannedRead[] {
    if (all) return this.allReads;
    if (this.frequencies.length > MAX_CACHED_FREQUENCIES) return this.build(this.dueBlocks(scan));
    let key = 0;
    for (let i = 0; i < this.frequencies.length; i++) if (scan % this.frequencies[i]! === 0) key |= 1 << i;
    let reads = this.byDueSet.get(key);
    if (!reads) this.byDueSet.set(key, (reads = this.build(this.dueBlocks(scan))));
    return reads;
  }

  /** The slave refused this merged read: its blocks are read one by one from now on. */
  split(read: PlannedRead): void {
    for (const index of read.blocks) this.alone.add(index);
    this.byDueSet.clear();
    this.allReads = this.build(this.blocks.map((_, index) => index));
  }

  /**
   * The reads of scans 0 … n-1 of the slave's repeating cycle (n: the least
   * common multiple of its block frequencies, at most `limit`), as requests:
   * what a poller that does the same work as the daemon sends.
   */
  cycle(limit = 10_000): Array<Array<PlannedRead['request']>> {
    let length = 1;
    for (const frequency of this.frequencies) length = Math.min(limit, (length * frequency) / gcd(length, frequency));
    return Array.from({ length }, (_, scan) => this.due(scan).map((read) => read.request));
  }

  private dueBlocks(scan: number): number[] {
    const due: number[] = [];
    for (let index = 0; index < this.blocks.length; index++) if (scan % this.blocks[index]!.frequency === 0) due.push(index);
    return due;
  }

  private build(indices: readonly number[]): PlannedRead[] {
    const sorted = [...indices].sort((a, b) => {
      const x = this.blocks[a]!;
      const y = this.blocks[b]!;
      return x.type === y.type ? x.start_reg - y.start_reg : x.type < y.type ? -1 : 1;
    });
    const reads: PlannedRead[] = [];
    let group: number[] = [];
    const flush = () => {
      if (group.length === 0) return;
      const first = this.blocks[group[0]!]!;
      const last = this.blocks[group.at(-1)!]!;
      reads.push({
        request: { fc: first.type === 'input' ? 4 : 3, address: first.start_reg, quantity: last.start_reg + last.count - first.start_reg },
        blocks: group,
        offsets: group.map((index) => this.blocks[index]!.start_reg - first.start_reg),
      });
      group = [];
    };
    for (const index of sorted) {
      const block = this.blocks[index]!;
      const previous = group.length > 0 ? this.blocks[group.at(-1)!]! : undefined;
      const first = group.length > 0 ? this.blocks[group[0]!]! : undefined;
      const joins =
        previous !== undefined &&
        first !== undefined &&
        !this.alone.has(index) &&
        !this.alone.has(group.at(-1)!) &&
        previous.type === block.type &&
        previous.start_reg + previous.count === block.start_reg &&
        block.start_reg + block.count - first.start_reg <= MAX_READ_REGISTERS;
      if (!joins) flush();
      group.push(index);
    }
    flush();
    // Reads go out in the order of the model's first block in each, as the blocks did before merging.
    return reads.sort((a, b) => a.blocks[0]! - b.blocks[0]!);
  }
}

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b);
}
