// Receive buffer for stream framers. Unconsumed bytes live in
// bytes[start..end): appending copies only the new chunk and consumed bytes
// are reclaimed when space runs out, so a long stream of small chunks costs
// linear copying rather than re-concatenating everything still buffered.

export class ByteQueue {
  bytes: Buffer;
  start = 0;
  end = 0;
  private parsing = false;

  constructor(initialCapacity: number) {
    this.bytes = Buffer.allocUnsafe(initialCapacity);
  }

  get length(): number {
    return this.end - this.start;
  }

  clear(): void {
    this.start = 0;
    this.end = 0;
  }

  /** Marks bytes before `offset` consumed; rewinds to the front once empty so appends rarely need to compact. */
  consumeTo(offset: number): void {
    this.start = offset;
    if (this.start >= this.end) this.clear();
  }

  append(chunk: Uint8Array): void {
    if (this.end + chunk.length > this.bytes.length) {
      const live = this.end - this.start;
      if (live + chunk.length <= this.bytes.length) {
        this.bytes.copyWithin(0, this.start, this.end);
      } else {
        const grown = Buffer.allocUnsafe(Math.max(this.bytes.length * 2, live + chunk.length));
        this.bytes.copy(grown, 0, this.start, this.end);
        this.bytes = grown;
      }
      this.start = 0;
      this.end = live;
    }
    this.bytes.set(chunk, this.end);
    this.end += chunk.length;
  }

  /**
   * Append `chunk` and run `parse` over the buffered bytes. A push made from
   * inside `parse` (a frame handler answering at once) only appends: the
   * running parse loop picks the bytes up, so frames are never parsed out of
   * order or by two loops at once.
   */
  feed(chunk: Uint8Array, parse: () => void): void {
    this.append(chunk);
    if (this.parsing) return;
    this.parsing = true;
    try {
      parse();
    } finally {
      this.parsing = false;
    }
  }

  /** Copy of bytes[from..to), safe to keep after the queue moves on. */
  copyOut(from: number, to: number): Buffer {
    return Buffer.from(this.bytes.subarray(from, to));
  }
}
