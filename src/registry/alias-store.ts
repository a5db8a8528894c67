// Persistence of the alias table in EVOK's alias.yaml format, so an existing
// /var/lib/evok/alias.yaml keeps working and EVOK can read what we write.
// Reading never fails: whatever cannot be used is preserved in a side copy
// before the next save would overwrite it.
import { readFileSync } from 'node:fs';
import { Document, parse, visit } from 'yaml';
import { writeFileAtomic } from '../state/atomic-file.js';
import { CoalescingSaver } from '../state/coalescing-saver.js';
import { firstLine } from '../state/first-line.js';
import { keepCopy } from '../state/json-state.js';
import { canonicalType, typeFromV2Id } from './type-names.js';

export interface AliasEntry {
  /** Plain circuit, e.g. '1_01' (not the 'ro_1_01' form the API shows). */
  circuit: string;
  /** Canonical device type name, e.g. 'ro'. */
  devtype: string;
}

/** Error text for a name that cannot be an alias, undefined when it can. */
export function validateAlias(name: string): string | undefined {
  return /^[A-Za-z0-9._-]+$/.test(name) ? undefined : `Invalid alias ${name}`;
}

/**
 * `keepCopy: false` for a look without side effects (the configuration check):
 * the daemon itself keeps the copy when it loads the file.
 */
export function readAliasFile(path: string, { keepCopy: keep = true }: { keepCopy?: boolean } = {}): { aliases: Map<string, AliasEntry>; warnings: string[] } {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { aliases: new Map(), warnings: [] };
    return { aliases: new Map(), warnings: [`${path}: cannot read aliases: ${(error as Error).message}`] };
  }
  if (text.trim() === '') return { aliases: new Map(), warnings: [`${path}: file is empty, no aliases loaded`] };

  let decoded: Decoded;
  try {
    // The duplicate-key check of the yaml package compares every key with every
    // other (50,000 aliases took seconds per thousand); a repeated alias is
    // the later entry, as a YAML 1.1 reader such as EVOK's takes it.
    decoded = decode(parse(text, { uniqueKeys: false }));
  } catch (error) {
    decoded = { aliases: new Map(), problems: [`not a valid alias file (${firstLine(error)}), no aliases loaded`] };
  }
  const warnings = decoded.problems.map((problem) => `${path}: ${problem}`);
  if (decoded.problems.length > 0 && keep) warnings.push(`${path}: ${keepCopy(path)}`);
  return { aliases: decoded.aliases, warnings };
}

interface Decoded {
  aliases: Map<string, AliasEntry>;
  /** Anything that was dropped; non-empty means the file holds data we did not load. */
  problems: string[];
}

function decode(data: unknown): Decoded {
  if (!isRecord(data)) throw new Error('expected a mapping with aliases and version');
  const { version, aliases } = data;
  // EVOK writes version '2.0' quoted; its docs show it unquoted, which YAML
  // reads as the number 2. EVOK then ignores the whole file; we accept both.
  if (version === '2.0' || version === 2) {
    if (aliases === undefined || aliases === null) return { aliases: new Map(), problems: [] };
    if (!isRecord(aliases)) throw new Error("version 2.0 expects 'aliases' to be a mapping");
    return collect(Object.entries(aliases).map(([name, entry]) => ({ name, entry, typeKey: 'devtype' })));
  }
  if (version === '1.0' || version === 1) {
    if (aliases === undefined || aliases === null) return { aliases: new Map(), problems: [] };
    if (!Array.isArray(aliases)) throw new Error("version 1.0 expects 'aliases' to be a list");
    return collect(aliases.map((entry: unknown) => ({ name: isRecord(entry) ? entry.name : undefined, entry, typeKey: 'dev_type' })));
  }
  throw new Error(`unknown version ${JSON.stringify(version)}`);
}

function collect(candidates: { name: unknown; entry: unknown; typeKey: string }[]): Decoded {
  const decoded: Decoded = { aliases: new Map(), problems: [] };
  for (const { name, entry, typeKey } of candidates) {
    const label = typeof name === 'string' || typeof name === 'number' ? String(name) : JSON.stringify(name);
    const invalidName = typeof name === 'string' || typeof name === 'number' ? validateAlias(String(name)) : 'missing name';
    const circuit = isRecord(entry) ? asText(entry.circuit) : undefined;
    const devtype = isRecord(entry) ? storedType(entry[typeKey]) : undefined;
    if (invalidName !== undefined) decoded.problems.push(`alias ${label} dropped: ${invalidName}`);
    else if (circuit === undefined) decoded.problems.push(`alias ${label} dropped: no circuit`);
    else if (devtype === undefined) decoded.problems.push(`alias ${label} dropped: unknown device type ${JSON.stringify(isRecord(entry) ? entry[typeKey] : undefined)}`);
    else {
      if (decoded.aliases.has(label)) decoded.problems.push(`alias ${label} listed twice, the later entry is used`);
      decoded.aliases.set(label, { circuit, devtype });
    }
  }
  return decoded;
}

/** Hand-edited files may use alternate names; EVOK 2 wrote numeric ids. */
function storedType(value: unknown): string | undefined {
  if (typeof value === 'number') return typeFromV2Id(value);
  return typeof value === 'string' ? canonicalType(value) : undefined;
}

/** Circuits such as `1` (a modbus_slave) come back from YAML as numbers when written unquoted. */
function asText(value: unknown): string | undefined {
  if (typeof value === 'string' && value !== '') return value;
  if (typeof value === 'number' && Number.isInteger(value)) return String(value);
  return undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}



/** Keys of the file's structure; everything else (alias names, values) is written quoted. */
const STRUCTURE_KEYS = new Set(['aliases', 'circuit', 'devtype', 'version']);

function serialize(aliases: Map<string, AliasEntry>): string {
  const sorted = [...aliases.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const doc = new Document({
    aliases: Object.fromEntries(sorted.map(([name, { circuit, devtype }]) => [name, { circuit, devtype }])),
    version: '2.0',
  });
  // Quoting every string keeps values such as '1_01' (an integer to YAML 1.1,
  // hence to EVOK's parser) or 'on' strings for every reader.
  visit(doc, {
    Scalar(key, node) {
      if (typeof node.value === 'string' && !(key === 'key' && STRUCTURE_KEYS.has(node.value))) node.type = 'QUOTE_SINGLE';
    },
  });
  return doc.toString();
}

/** Replaces the alias file atomically (see writeFileAtomic): the old or the new complete table, never a torn one. */
export function writeAliasFileAtomic(path: string, aliases: Map<string, AliasEntry>): Promise<void> {
  return writeFileAtomic(path, serialize(aliases));
}

/**
 * Saves the alias table shortly after it changes (see CoalescingSaver). EVOK
 * waited up to 300 s and lost unsaved aliases on shutdown; the daemon calls
 * flush() when stopping.
 */
export class AliasSaver extends CoalescingSaver<Map<string, AliasEntry>> {
  constructor(path: string, delayMs = 1000, log: (message: string) => void = (message) => console.error(message)) {
    super(`aliases to ${path}`, (aliases) => writeAliasFileAtomic(path, aliases), delayMs, log);
  }
}
