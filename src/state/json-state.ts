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

/** Where writeJsonStateWithCopy keeps its second copy of a file. */
export function copyPathOf(path: string): string {
  return `${path}.last-good`;
}

/**
 * For state whose loss does harm (a counter total that must never go back):
 * the file, then a second copy beside it, each written atomically. An atomic
 * write cannot tear, but a card or a hand can still damage a file at rest;
 * the copy, written after the file was, is the last state known good.
 */
export async function writeJsonStateWithCopy(path: string, data: unknown): Promise<void> {
  const text = `${JSON.stringify(data)}\n`;
  await writeFileAtomic(path, text);
  await writeFileAtomic(copyPathOf(path), text);
}

/** Both copies written by writeJsonStateWithCopy, each read as readJsonState does; the caller merges them. */
export function readJsonStateWithCopy(path: string): { file: StateRead; copy: StateRead } {
  return { file: readJsonState(path), copy: readJsonState(copyPathOf(path)) };
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
