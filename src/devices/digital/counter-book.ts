// The counter totals of all DIs, kept in `counter-totals.json` in the state
// directory. Each total is saved with the raw reading it stands on, so after
// a restart the pulses the board counted meanwhile are added from the first
// reading; only a board reset while iogate was down loses what was counted
// since the last save. Saves come at most every `intervalMs` while counters
// move, and at shutdown. A second copy is written after each save
// (`counter-totals.json.last-good`): a file damaged at rest (a card's bad
// block, an edit by hand) falls back to it, total by total, so a damaged file
// never lowers a total.
import { join } from 'node:path';
import { CoalescingSaver } from '../../state/coalescing-saver.js';
import { copyPathOf, readJsonStateWithCopy, writeJsonStateWithCopy } from '../../state/json-state.js';
import { CounterTotal, type CounterEvent, type CounterSnapshot } from './counter-total.js';

export const COUNTER_FILE = 'counter-totals.json';

const FORMAT = 1;

interface CounterFile {
  format: number;
  counters: Record<string, CounterSnapshot>;
}

export class CounterBook {
  readonly path: string;
  private readonly saved = new Map<string, CounterSnapshot>();
  private readonly counters = new Map<string, CounterTotal>();
  private readonly saver: CoalescingSaver<CounterFile>;

  constructor(
    stateDir: string,
    intervalMs: number,
    private readonly log: { info(message: string): void; warn(message: string): void; error(message: string): void },
  ) {
    this.path = join(stateDir, COUNTER_FILE);
    const { file, copy } = readJsonStateWithCopy(this.path);
    if (file.warning) log.warn(`counter totals: ${file.warning}`);
    if (copy.warning) log.warn(`counter totals: ${copy.warning}`);
    // Totals only grow, so of two snapshots of a counter the higher total is the later one;
    // one that the damaged file lost or mangled comes from the copy.
    const fromFile = readCounters(file.data);
    for (const [key, snapshot] of Object.entries(readCounters(copy.data))) {
      const current = fromFile[key];
      if (current === undefined || current.total < snapshot.total) {
        log.warn(`counter totals: di ${key}: ${snapshot.total} taken from ${copyPathOf(this.path)}, as ${this.path} ${current === undefined ? 'lacks it' : `says ${current.total}`}`);
        fromFile[key] = snapshot;
      }
    }
    for (const [key, snapshot] of Object.entries(fromFile)) this.saved.set(key, snapshot);
    this.saver = new CoalescingSaver(`counter totals to ${this.path}`, (data) => writeJsonStateWithCopy(this.path, data), intervalMs, (message) => log.error(message));
  }

  /** The total of one DI, continuing from its saved state. */
  open(key: string): CounterTotal {
    const counter = new CounterTotal(this.saved.get(key), (event) => this.logEvent(key, event));
    this.counters.set(key, counter);
    return counter;
  }

  /** A total or its raw reading moved: saved within the interval. Called at every moving poll, so it allocates nothing. */
  changed(): void {
    this.saver.markDirty(this.snapshotFile);
  }

  private readonly snapshotFile = (): CounterFile => this.file();

  /** Writes what is unsaved (at shutdown). */
  flush(): Promise<void> {
    return this.saver.flush();
  }

  private file(): CounterFile {
    // Totals of DIs not configured this time are kept: the board may come back.
    const counters: Record<string, CounterSnapshot> = Object.fromEntries(this.saved);
    for (const [key, counter] of this.counters) {
      const snapshot = counter.snapshot();
      if (snapshot) counters[key] = snapshot;
    }
    return { format: FORMAT, counters };
  }

  private logEvent(key: string, event: CounterEvent): void {
    // A wrap or reset is saved at once (they are rare): after a crash, a total saved before a wrap
    // would meet a small reading and have to take it for a reset, losing the pulses before the wrap.
    this.changed();
    queueMicrotask(() => void this.flush());
    switch (event.kind) {
      case 'wrap':
        this.log.info(`di ${key}: counter wrapped past 2^32; counter_total continues`);
        return;
      case 'reset':
        this.log.info(`di ${key}: counter dropped to ${event.added} (board reset or replaced); counter_total continues`);
        return;
      case 'rebased':
        this.log.warn(`di ${key}: counter went back from ${event.from} to ${event.to} and stayed there; counter_total continues from ${event.to} without adding`);
    }
  }
}

function readCounters(data: unknown): Record<string, CounterSnapshot> {
  if (typeof data !== 'object' || data === null) return {};
  const counters = (data as { counters?: unknown }).counters;
  if (typeof counters !== 'object' || counters === null) return {};
  const result: Record<string, CounterSnapshot> = {};
  for (const [key, value] of Object.entries(counters)) {
    const { total, raw } = (value ?? {}) as Partial<CounterSnapshot>;
    if (isCount(total) && isCount(raw) && raw < 2 ** 32) result[key] = { total, raw };
  }
  return result;
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}
