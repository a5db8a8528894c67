// Persistence of the alias table in EVOK's alias.yaml format, so an existing
// /var/lib/evok/alias.yaml keeps working and EVOK can read what we write.
// Reading never fails: whatever cannot be used is preserved in a side copy
// before the next save would overwrite it.
import { copyFileSync, readFileSync } from 'node:fs';
import { mkdir, open, rename, stat, unlink } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { Document, parse, visit } from 'yaml';
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

export function readAliasFile(path: string): { aliases: Map<string, AliasEntry>; warnings: string[] } {
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
  if (decoded.problems.length > 0) warnings.push(keepCopy(path));
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

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0];
}

/** Copies a file we could not fully use next to it, so the next save does not destroy it. */
function keepCopy(path: string): string {
  const copy = `${path}.corrupt-${new Date().toISOString().replace(/[:.]/g, '-')}`;
  try {
    copyFileSync(path, copy);
    return `${path}: the original was kept as ${copy}`;
  } catch (error) {
    return `${path}: could not keep a copy as ${copy}: ${firstLine(error)}`;
  }
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

/**
 * Replaces the file so that, whatever moment the process or the machine dies,
 * the path holds either the old or the new complete table: write a temporary
 * file in the same directory, flush it to disk, rename it over the target,
 * then flush the directory so the rename itself is durable. The temporary
 * name is fixed (one writer per file is assumed), so a write cut short
 * leaves no litter beyond one file that the next write reuses. A write that
 * fails (disk full, read-only, file size limit) rejects and leaves the old
 * file as it was. The new file gets the old one's permissions and, where the
 * process may set it, its owner: a user who made it 0600 keeps it so.
 */
export async function writeAliasFileAtomic(path: string, aliases: Map<string, AliasEntry>): Promise<void> {
  const dir = dirname(path);
  const temp = join(dir, `.${basename(path)}.tmp`);
  await mkdir(dir, { recursive: true });
  const previous = await stat(path).catch(() => undefined);
  try {
    const handle = await open(temp, 'w', 0o644);
    try {
      if (previous) await keepModeAndOwner(handle, previous);
      await handle.writeFile(serialize(aliases), 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, path);
  } catch (error) {
    // The write error is what matters; a temp file that cannot be removed is reused next time.
    await unlink(temp).catch(() => undefined);
    throw error;
  }
  await syncDirectory(dir);
}

type FileHandle = Awaited<ReturnType<typeof open>>;

async function keepModeAndOwner(handle: FileHandle, previous: Stats): Promise<void> {
  await handle.chmod(previous.mode & 0o7777);
  try {
    await handle.chown(previous.uid, previous.gid);
  } catch (error) {
    // Only root may give a file away; a file we may replace but not chown
    // was not ours to begin with, and keeps its mode at least.
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') throw error;
  }
}

async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } catch (error) {
    // Some filesystems cannot fsync a directory; the rename has happened, so
    // the save stands, only its durability across a power cut is weaker.
    if (!['EINVAL', 'ENOTSUP', 'EISDIR', 'EPERM'].includes((error as NodeJS.ErrnoException).code ?? '')) throw error;
  } finally {
    await handle.close();
  }
}

/**
 * Saves the alias table shortly after it changes: changes within `delayMs` of
 * each other cost one write, at most one write runs at a time, and the table
 * is read (through the snapshot callback) when the write starts, so the
 * newest state is what lands on disk. EVOK waited up to 300 s and lost
 * unsaved aliases on shutdown; the daemon calls flush() when stopping.
 */
export class AliasSaver {
  private timer: NodeJS.Timeout | undefined;
  /** Set while there are unsaved changes. */
  private pending: (() => Map<string, AliasEntry>) | undefined;
  private writing: Promise<void> | undefined;

  constructor(
    private readonly path: string,
    private readonly delayMs = 1000,
    private readonly log: (message: string) => void = (message) => console.error(message),
  ) {}

  markDirty(snapshot: () => Map<string, AliasEntry>): void {
    this.pending = snapshot;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.save(), this.delayMs);
    // Shutdown goes through flush(); the timer alone must not keep the process alive.
    this.timer.unref();
  }

  /** Writes unsaved changes now; resolves when the file is up to date (or the write failed and was logged). */
  async flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.save();
  }

  /** Writes unsaved changes now and rejects with the reason when the file could not be written. */
  async flushOrThrow(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const failure = await this.save();
    if (failure !== undefined) throw failure;
  }

  /** The error of a failed write (logged, and the changes kept for the next try), else undefined. */
  private async save(): Promise<Error | undefined> {
    while (this.writing !== undefined) await this.writing;
    const snapshot = this.pending;
    if (snapshot === undefined) return undefined;
    this.pending = undefined;
    let failure: Error | undefined;
    this.writing = Promise.resolve()
      .then(() => writeAliasFileAtomic(this.path, snapshot()))
      .catch((error: unknown) => {
        failure = error instanceof Error ? error : new Error(String(error));
        this.log(`Saving aliases to ${this.path} failed: ${firstLine(error)}`);
        // Still unsaved: the next change or flush() tries again.
        this.pending ??= snapshot;
      })
      .finally(() => {
        this.writing = undefined;
      });
    await this.writing;
    return failure;
  }
}
