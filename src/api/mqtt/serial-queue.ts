// Runs tasks one after another per key and different keys side by side:
// commands for one device keep their order, commands for different devices
// do not wait for each other (the bus orders the actual transactions).

export class SerialQueue<K> {
  private readonly pending = new Map<K, { tail: Promise<void>; count: number }>();

  /** @param maxPerKey tasks one key may have waiting or running; more are refused. */
  constructor(private readonly maxPerKey: number) {}

  /** Queue `task` behind the key's earlier tasks; false (and nothing queued) when the key is full. */
  run(key: K, task: () => Promise<void>): boolean {
    const entry = this.pending.get(key) ?? { tail: Promise.resolve(), count: 0 };
    if (entry.count >= this.maxPerKey) return false;
    entry.count++;
    entry.tail = entry.tail.then(task).catch(() => undefined).finally(() => {
      if (--entry.count === 0) this.pending.delete(key);
    });
    this.pending.set(key, entry);
    return true;
  }
}
