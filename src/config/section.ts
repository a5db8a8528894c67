// Typed access to one mapping of the configuration. Every read records the
// key as known, so keys nobody asked for can be reported as unknown; every
// problem is recorded with file:line and the full key path instead of being
// thrown, so one run reports all of them.
import { closeMatches } from '../text/close-matches.js';
import type { MapNode, Origin, TreeNode } from './yaml-tree.js';
import type { Findings } from './findings.js';

/** Spellings from EVOK's own documentation that its code never read. */
const MISSPELLINGS: Record<string, string> = {
  slave_id: 'slave-id',
  model_id: 'model',
  boudrate: 'baudrate',
  client_id: 'client-id',
};

// PyYAML (YAML 1.1) reads these words as booleans; EVOK files may use them.
const YAML11_TRUE = new Set(['yes', 'Yes', 'YES', 'on', 'On', 'ON']);
const YAML11_FALSE = new Set(['no', 'No', 'NO', 'off', 'Off', 'OFF']);

export class ConfigSection {
  private readonly known = new Set<string>();

  constructor(
    private readonly node: MapNode,
    /** Dotted key path of this mapping, '' for the top level. */
    readonly path: string,
    /** Where the mapping's key was written; used for problems about missing keys. */
    readonly at: Origin,
    readonly findings: Findings,
  ) {}

  keyPath(key: string): string {
    return this.path === '' ? key : `${this.path}.${key}`;
  }

  /** Present with a non-null value. */
  has(key: string): boolean {
    const entry = this.node.entries.get(key);
    return entry !== undefined && !isNull(entry.node);
  }

  /** The raw node of a key (marking it known); undefined when absent or null. */
  value(key: string): TreeNode | undefined {
    this.known.add(key);
    const entry = this.node.entries.get(key);
    return entry === undefined || isNull(entry.node) ? undefined : entry.node;
  }

  /** Marks every key known: for parts that are deliberately skipped (a disabled bus). */
  ignoreAll(): void {
    for (const key of this.node.entries.keys()) this.known.add(key);
  }

  /** Keys read elsewhere (e.g. before an autogen merge) that must not be reported as unknown. */
  markKnown(...keys: string[]): void {
    for (const key of keys) this.known.add(key);
  }

  error(origin: Origin, key: string | undefined, message: string): void {
    const path = key === undefined ? this.path : this.keyPath(key);
    this.findings.error(origin, `${path === '' ? '' : `${path}: `}${message}`);
  }

  warn(origin: Origin, key: string | undefined, message: string): void {
    const path = key === undefined ? this.path : this.keyPath(key);
    this.findings.warn(origin, `${path === '' ? '' : `${path}: `}${message}`);
  }

  /** Records "expected X, got Y" for a value of the wrong type or range. */
  mismatch(node: TreeNode, key: string, expected: string): void {
    this.error(node.origin, key, `expected ${expected}, got ${describe(node)}`);
  }

  missing(key: string, expected: string): void {
    this.error(this.at, undefined, `missing required key '${key}' (${expected})`);
  }

  boolean(key: string, fallback: boolean): boolean {
    const node = this.value(key);
    if (node === undefined) return fallback;
    if (node.kind === 'scalar') {
      if (typeof node.value === 'boolean') return node.value;
      if (node.plain && YAML11_TRUE.has(node.text)) return true;
      if (node.plain && YAML11_FALSE.has(node.text)) return false;
    }
    this.mismatch(node, key, 'true or false');
    return fallback;
  }

  integer(key: string, fallback: number, min: number, max: number): number {
    const node = this.value(key);
    if (node === undefined) return fallback;
    if (node.kind === 'scalar' && typeof node.value === 'number' && Number.isInteger(node.value) && node.value >= min && node.value <= max) {
      return node.value;
    }
    this.mismatch(node, key, `an integer ${min}..${max}`);
    return fallback;
  }

  number(key: string, fallback: number, min: number): number {
    const node = this.value(key);
    if (node === undefined) return fallback;
    if (node.kind === 'scalar' && typeof node.value === 'number' && Number.isFinite(node.value) && node.value >= min) {
      return node.value;
    }
    this.mismatch(node, key, `a number >= ${min}`);
    return fallback;
  }

  optionalString(key: string): string | undefined {
    const node = this.value(key);
    if (node === undefined) return undefined;
    const text = scalarText(node);
    if (text === undefined || text === '') {
      this.mismatch(node, key, 'a non-empty string');
      return undefined;
    }
    return text;
  }

  string(key: string, fallback: string): string {
    return this.optionalString(key) ?? fallback;
  }

  /** A string that must be present; records a problem and returns '' when it is not. */
  requiredString(key: string, expected: string): string {
    if (!this.has(key)) {
      this.markKnown(key);
      this.missing(key, expected);
      return '';
    }
    return this.optionalString(key) ?? '';
  }

  choice<T extends string | number>(key: string, choices: readonly T[], fallback: T): T {
    const node = this.value(key);
    if (node === undefined) return fallback;
    const found = node.kind === 'scalar' ? choices.find((choice) => choice === node.value || (typeof choice === 'string' && choice === scalarText(node))) : undefined;
    if (found !== undefined) return found;
    this.mismatch(node, key, `one of ${choices.join(', ')}`);
    return fallback;
  }

  /** A list of strings; a single string is taken as a list of one. */
  stringList(key: string, fallback: readonly string[]): string[] {
    const node = this.value(key);
    if (node === undefined) return [...fallback];
    const items = node.kind === 'seq' ? node.items : [node];
    const strings: string[] = [];
    for (const item of items) {
      const text = scalarText(item);
      if (text === undefined || text === '') this.mismatch(item, key, 'a string or a list of strings');
      else strings.push(text);
    }
    return strings;
  }

  /** A nested mapping; an empty one when the key is absent, so defaults apply. */
  section(key: string): ConfigSection {
    const node = this.value(key);
    const at = this.node.entries.get(key)?.keyOrigin ?? this.at;
    if (node !== undefined && node.kind !== 'map') this.mismatch(node, key, 'a mapping');
    const map: MapNode = node?.kind === 'map' ? node : { kind: 'map', entries: new Map(), origin: at };
    return new ConfigSection(map, this.keyPath(key), at, this.findings);
  }

  /** Each entry of this mapping as a named section (buses, devices). */
  children(): { name: string; section: ConfigSection }[] {
    const children: { name: string; section: ConfigSection }[] = [];
    for (const name of this.node.entries.keys()) children.push({ name, section: this.section(name) });
    return children;
  }

  /** A list whose items are mappings (auth tokens). */
  sectionList(key: string): ConfigSection[] {
    const node = this.value(key);
    if (node === undefined) return [];
    if (node.kind !== 'seq') {
      this.mismatch(node, key, 'a list');
      return [];
    }
    const sections: ConfigSection[] = [];
    node.items.forEach((item, index) => {
      const itemKey = `${key}[${index}]`;
      if (item.kind === 'map') sections.push(new ConfigSection(item, this.keyPath(itemKey), item.origin, this.findings));
      else this.mismatch(item, itemKey, 'a mapping');
    });
    return sections;
  }

  /** Warns about every key no reader asked for; call after reading the section. */
  warnUnknownKeys(): void {
    for (const [key, entry] of this.node.entries) {
      if (this.known.has(key)) continue;
      // A known misspelling first, else the key this section reads that is closest in spelling.
      const hint = MISSPELLINGS[key] ?? closeMatches(key, [...this.known].filter((name) => !this.node.entries.has(name)), 1)[0];
      this.warn(entry.keyOrigin, key, hint === undefined ? 'unknown key, ignored' : `unknown key, ignored (did you mean '${hint}'?)`);
    }
  }
}

export function isNull(node: TreeNode): boolean {
  return node.kind === 'scalar' && node.value === null;
}

/**
 * The text of a scalar meant as a string. Unquoted numbers and booleans count
 * as written (`parity: N`, `client-id: 0123`, `password: 1234`).
 */
function scalarText(node: TreeNode): string | undefined {
  if (node.kind !== 'scalar' || node.value === null) return undefined;
  return typeof node.value === 'string' ? node.value : node.text;
}

function describe(node: TreeNode): string {
  if (node.kind === 'map') return 'a mapping';
  if (node.kind === 'seq') return 'a list';
  return `'${node.text}'`;
}
