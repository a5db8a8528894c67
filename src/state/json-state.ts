// Small JSON state files in the state directory (bdSeq, counter totals,
// buffered changes): read leniently at start, written atomically.
import { copyFileSync, readFileSync } from 'node:fs';
import { writeFileAtomic } from './atomic-file.js';
import { firstLine } from './first-line.js';

export interface StateRead {
  /** The parsed JSON; undefined when the file is missing or unusable. */
  data: unknown;
  /** Why the file could not be used (a copy of it is kept beside it); undefined when all is well. */
  warning?: string;
}

/** Reading never fails: a missing file is empty state, a corrupt one is kept aside and reported. */
export function readJsonState(path: string): StateRead {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { data: undefined };
    return { data: undefined, warning: `${path}: cannot read: ${firstLine(error)}` };
  }
  try {
    return { data: JSON.parse(text) as unknown };
  } catch (error) {
    return { data: undefined, warning: `${path}: not valid JSON (${firstLine(error)}), ignored; ${keepCopy(path)}` };
  }
}

export function writeJsonState(path: string, data: unknown): Promise<void> {
  return writeFileAtomic(path, `${JSON.stringify(data)}\n`);
}

/** Copies a file we could not fully use next to it, so the next save does not destroy it. */
export function keepCopy(path: string): string {
  const copy = `${path}.corrupt-${new Date().toISOString().replace(/[:.]/g, '-')}`;
  try {
    copyFileSync(path, copy);
    return `the original was kept as ${copy}`;
  } catch (error) {
    return `could not keep a copy as ${copy}: ${firstLine(error)}`;
  }
}
