// Turns a YAML file into a small tree whose every node remembers the file and
// line it was written on. The tree outlives the parser so that autogen.yaml
// and config.yaml can be merged while each value still points at its own
// file for messages.
import { readFileSync } from 'node:fs';
import { LineCounter, isAlias, isMap, isNode, isScalar, isSeq, parseDocument, type Document, type YAMLError } from 'yaml';
import { ConfigError, unreadableFile } from './errors.js';

export interface Origin {
  file: string;
  line: number;
  col: number;
}

export interface ScalarNode {
  kind: 'scalar';
  value: string | number | boolean | null;
  /** The scalar as written (unquoted text for quoted scalars). */
  text: string;
  /** Unquoted in the file, so its type came from YAML's resolution rules. */
  plain: boolean;
  origin: Origin;
}

export interface MapEntry {
  keyOrigin: Origin;
  node: TreeNode;
}

export interface MapNode {
  kind: 'map';
  entries: Map<string, MapEntry>;
  origin: Origin;
}

export interface SeqNode {
  kind: 'seq';
  items: TreeNode[];
  origin: Origin;
}

export type TreeNode = ScalarNode | MapNode | SeqNode;

export function formatOrigin(origin: Origin): string {
  return `${origin.file}:${origin.line}`;
}

/** What the parser tolerated but thought worth saying (e.g. an unknown tag). */
export interface YamlWarning {
  at: Origin;
  message: string;
}

export function readYamlFile(file: string): { tree: TreeNode; warnings: YamlWarning[] } {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw unreadableFile(file, error as NodeJS.ErrnoException);
  }
  return readYamlText(text, file);
}

/** `name` stands in for a file name in messages (e.g. for built-in text). */
export function readYamlText(text: string, name: string): { tree: TreeNode; warnings: YamlWarning[] } {
  const lineCounter = new LineCounter();
  // YAML 1.2 core schema: `N`, `yes`, `on` stay strings (parity: N would be
  // false under 1.1). The readers accept PyYAML's 1.1 boolean words where a
  // boolean is expected, so files written for EVOK keep their meaning.
  // Merge keys (`<<: *anchor`) are enabled because PyYAML supports them.
  const doc = parseDocument(text, { lineCounter, merge: true, uniqueKeys: true, prettyErrors: true });
  if (doc.errors.length > 0) {
    throw new ConfigError(doc.errors.map((error) => describeSyntaxError(error, name)));
  }
  const origin = (offset: number): Origin => {
    const { line, col } = lineCounter.linePos(offset);
    return { file: name, line, col };
  };
  const warnings = doc.warnings.map((warning) => ({ at: origin(warning.pos[0]), message: headline(warning) }));
  if (doc.contents === null) {
    return { tree: { kind: 'map', entries: new Map(), origin: origin(0) }, warnings };
  }
  return { tree: convert(doc.contents, doc, origin, new Set(), { nodesLeft: MAX_TREE_NODES }), warnings };
}

/**
 * Aliases are expanded into copies, so nine lines of nested aliases can stand
 * for a billion nodes. A real configuration has a few hundred; past this
 * bound the file is refused instead of exhausting memory.
 */
const MAX_TREE_NODES = 100_000;

type LibNode = NonNullable<Document.Parsed['contents']>;

function convert(
  node: unknown,
  doc: Document.Parsed,
  origin: (offset: number) => Origin,
  resolving: Set<unknown>,
  budget: { nodesLeft: number },
): TreeNode {
  if (--budget.nodesLeft < 0) {
    const at = formatOrigin(origin((node as LibNode).range?.[0] ?? 0));
    throw new ConfigError([`${at}: more than ${MAX_TREE_NODES} values once aliases are expanded; is an alias nested into itself many times?`]);
  }
  if (isAlias(node)) {
    const target = node.resolve(doc);
    if (target === undefined || resolving.has(target)) {
      throw new ConfigError([`${formatOrigin(origin(node.range?.[0] ?? 0))}: alias *${node.source} cannot be resolved (unknown or recursive anchor)`]);
    }
    resolving.add(target);
    const converted = convert(target, doc, origin, resolving, budget);
    resolving.delete(target);
    return converted;
  }
  const at = origin((node as LibNode).range?.[0] ?? 0);
  if (isScalar(node)) {
    const value = node.value;
    const text = typeof node.source === 'string' ? node.source : String(value);
    const simple = value === null || typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
    return {
      kind: 'scalar',
      // Values of other tags (binary, explicit custom tags) are kept as written.
      value: simple ? value : text,
      text: typeof value === 'string' ? value : text,
      plain: node.type === 'PLAIN',
      origin: at,
    };
  }
  if (isSeq(node)) {
    return { kind: 'seq', items: node.items.map((item) => convert(item, doc, origin, resolving, budget)), origin: at };
  }
  if (isMap(node)) {
    const entries = new Map<string, MapEntry>();
    const merged: TreeNode[] = [];
    for (const pair of node.items) {
      const keyOrigin = isNode(pair.key) ? origin(pair.key.range?.[0] ?? 0) : at;
      const value: TreeNode = pair.value === null
        ? { kind: 'scalar', value: null, text: '', plain: true, origin: keyOrigin }
        : convert(pair.value, doc, origin, resolving, budget);
      // With merge keys enabled the parser marks `<<` with a symbol value.
      if (isScalar(pair.key) && typeof pair.key.value === 'symbol') {
        merged.push(value);
        continue;
      }
      if (!isScalar(pair.key)) {
        throw new ConfigError([`${formatOrigin(keyOrigin)}: mapping keys must be plain scalars`]);
      }
      const key = String(pair.key.value);
      if (entries.has(key)) {
        throw new ConfigError([`${formatOrigin(keyOrigin)}: duplicate key '${key}'`]);
      }
      entries.set(key, { keyOrigin, node: value });
    }
    for (const source of merged.flatMap((value) => (value.kind === 'seq' ? value.items : [value]))) {
      if (source.kind !== 'map') {
        throw new ConfigError([`${formatOrigin(source.origin)}: a merge key (<<) must refer to a mapping`]);
      }
      // Explicit keys win over merged ones; among merged maps the first listed wins.
      for (const [key, entry] of source.entries) {
        if (!entries.has(key)) entries.set(key, entry);
      }
    }
    return { kind: 'map', entries, origin: at };
  }
  throw new ConfigError([`${formatOrigin(at)}: unsupported YAML node`]);
}

function locate(error: YAMLError, name: string): string {
  const position = error.linePos?.[0];
  return position ? `${name}:${position.line}:${position.col}` : name;
}

/** The parser's message without its own "at line X, column Y" tail and excerpt. */
function headline(error: YAMLError): string {
  return error.message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '');
}

function describeSyntaxError(error: YAMLError, name: string): string {
  const excerpt = error.message.split('\n').slice(1).filter((line) => line.trim() !== '');
  const shown = excerpt.length > 0 ? `\n${excerpt.map((line) => `      ${line}`).join('\n')}` : '';
  return `${locate(error, name)}: invalid YAML: ${headline(error)}${shown}`;
}
