// A seeded random source (sfc32), so a fuzz run can be replayed from the seed
// it printed. Each attacker and peer takes its own stream with fork(name):
// what one of them does next never depends on how far another has got, only
// on its own history. Timing (who runs when) still differs between runs.

export class Random {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(readonly seed: number) {
    this.a = 0x9e3779b9;
    this.b = 0x243f6a88;
    this.c = 0xb7e15162;
    this.d = seed >>> 0;
    for (let i = 0; i < 16; i++) this.next();
  }

  /** A uniform 32-bit unsigned integer. */
  next(): number {
    this.a >>>= 0;
    this.b >>>= 0;
    this.c >>>= 0;
    this.d >>>= 0;
    let t = (this.a + this.b) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.d = (this.d + 1) | 0;
    t = (t + this.d) | 0;
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  /** In [0, 1). */
  float(): number {
    return this.next() / 0x1_0000_0000;
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.float() * (max - min + 1));
  }

  chance(probability: number): boolean {
    return this.float() < probability;
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(0, items.length - 1)]!;
  }

  /** Picks by weight: `[[weight, value], …]`. */
  weighted<T>(choices: ReadonlyArray<readonly [number, T]>): T {
    let total = 0;
    for (const [weight] of choices) total += weight;
    let at = this.float() * total;
    for (const [weight, value] of choices) {
      at -= weight;
      if (at < 0) return value;
    }
    return choices[choices.length - 1]![1];
  }

  bytes(length: number): Buffer {
    const buffer = Buffer.allocUnsafe(length);
    for (let i = 0; i < length; i++) buffer[i] = this.next() & 0xff;
    return buffer;
  }

  /** Mostly small, sometimes large: lengths near the interesting limits come up often. */
  length(max: number): number {
    return this.weighted<number>([
      [6, this.int(0, 16)],
      [3, this.int(0, 1024)],
      [1, this.int(0, max)],
    ]);
  }

  /** An independent stream for `name`, derived from this one's seed. */
  fork(name: string): Random {
    let hash = (this.seed ^ 0x811c9dc5) >>> 0;
    for (let i = 0; i < name.length; i++) hash = Math.imul(hash ^ name.charCodeAt(i), 0x01000193);
    return new Random(hash >>> 0);
  }
}
