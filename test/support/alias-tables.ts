// Alias tables shared by the alias-store tests and their child process.
import type { AliasEntry } from '../../src/registry/alias-store.js';

/** Large enough that one save takes several milliseconds, so kills land mid-write. */
export function bigAliasTable(devtype: string, size = 4000): Map<string, AliasEntry> {
  const table = new Map<string, AliasEntry>();
  for (let i = 0; i < size; i++) {
    table.set(`${devtype}_alias_${String(i).padStart(5, '0')}`, { circuit: `${1 + (i % 3)}_${String(i).padStart(2, '0')}`, devtype });
  }
  return table;
}
