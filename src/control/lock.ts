// One operation at a time, in arrival order: the writes to the outputs of an
// interlock group, the commands of one cover.

export class AsyncLock {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(operation: () => Promise<T>): Promise<T> {
    const result = this.tail.then(operation, operation);
    // The next operation waits for this one to settle, whichever way it ends.
    this.tail = result.catch(() => undefined);
    return result;
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
