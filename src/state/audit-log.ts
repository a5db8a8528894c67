import { open, readFile, rename, stat, unlink, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../logging/log.js';
import type { AuditEntry } from '../registry/audit-trail.js';

// The audit log on disk: JSON lines in state_dir, append-only. Entries are
// buffered in memory and written out once a second with an fsync, so a write
// never waits for the disk and a power cut loses at most the last second.
// The log is bounded: `audit.jsonl` is renamed to `audit.1.jsonl` (and so on)
// when it reaches a quarter of max_mb, and the oldest of the four files goes.
// A line cut short by a crash is skipped when reading, and the next entry
// starts on a line of its own.

export const AUDIT_FILE = 'audit.jsonl';
/** The current file and three rotated ones: the total stays within max_mb. */
const FILES = 4;
/** Entries waiting for the next flush; beyond it they are dropped and counted (a full disk must not fill memory). */
const MAX_PENDING_BYTES = 4 * 1024 * 1024;
const FLUSH_MS = 1000;
/** `GET /audit` answers at most this many entries at once. */
export const MAX_AUDIT_LIMIT = 1000;

export interface AuditLogOptions {
  dir: string;
  /** Bound on all files together (audit.max_mb). */
  maxBytes: number;
  log: Logger;
  flushMs?: number;
}

export interface AuditStats {
  /** Entries written to disk. */
  written: number;
  /** Entries dropped: the buffer was full, or the disk refused them. */
  dropped: number;
  rotations: number;
}

export class AuditLog {
  readonly stats: AuditStats = { written: 0, dropped: 0, rotations: 0 };
  private pending: string[] = [];
  private pendingBytes = 0;
  private size = 0;
  /** The file ends without a newline (a crash tore its last line): the next write starts a new one. */
  private torn = false;
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private failedWarned = false;
  private readonly path: string;
  private readonly fileBytes: number;

  private constructor(private readonly options: AuditLogOptions) {
    this.path = join(options.dir, AUDIT_FILE);
    this.fileBytes = Math.max(4096, Math.floor(options.maxBytes / FILES));
  }

  static async open(options: AuditLogOptions): Promise<AuditLog> {
    const auditLog = new AuditLog(options);
    await mkdir(options.dir, { recursive: true });
    const found = await stat(auditLog.path).catch(() => undefined);
    if (found && found.size > 0) {
      auditLog.size = found.size;
      const handle = await open(auditLog.path, 'r');
      try {
        const last = Buffer.alloc(1);
        await handle.read(last, 0, 1, found.size - 1);
        auditLog.torn = last[0] !== 0x0a;
      } finally {
        await handle.close();
      }
    }
    auditLog.timer = setInterval(() => void auditLog.flush(), options.flushMs ?? FLUSH_MS);
    auditLog.timer.unref();
    return auditLog;
  }

  /** Takes an entry; never waits and never throws. */
  readonly record = (entry: AuditEntry): void => {
    const line = `${JSON.stringify(entry)}\n`;
    if (this.pendingBytes + line.length > MAX_PENDING_BYTES) {
      this.stats.dropped++;
      return;
    }
    this.pending.push(line);
    this.pendingBytes += line.length;
  };

  /** Writes what is buffered and fsyncs it; one flush at a time. */
  flush(): Promise<void> {
    this.flushing ??= this.writeOut().finally(() => (this.flushing = undefined));
    return this.flushing;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flushing;
    await this.flush();
  }

  /**
   * Entries after `sinceMs` (the first `limit` of them), or without it the
   * last `limit` entries; oldest first. Entries not yet on disk are included.
   */
  async read(sinceMs: number | undefined, limit: number): Promise<AuditEntry[]> {
    const lines: string[] = [];
    for (let index = FILES - 1; index >= 0; index--) {
      const text = await readFile(this.fileAt(index), 'utf8').catch(() => '');
      for (const line of text.split('\n')) if (line !== '') lines.push(line);
    }
    for (const line of this.pending) lines.push(line.slice(0, -1));
    const entries: AuditEntry[] = [];
    for (const line of lines) {
      const entry = parseEntry(line);
      if (entry === undefined) continue;
      if (sinceMs !== undefined && !(Date.parse(entry.ts) > sinceMs)) continue;
      entries.push(entry);
      if (sinceMs !== undefined && entries.length >= limit) break;
    }
    return sinceMs === undefined ? entries.slice(-limit) : entries;
  }

  private fileAt(index: number): string {
    return index === 0 ? this.path : join(this.options.dir, `audit.${index}.jsonl`);
  }

  private async writeOut(): Promise<void> {
    if (this.pending.length === 0) return;
    const lines = this.pending;
    this.pending = [];
    this.pendingBytes = 0;
    try {
      // Cut into pieces that each fit the current file, rotating between them, so no file outgrows its share.
      let piece: string[] = [];
      let pieceBytes = this.torn ? 1 : 0;
      for (const line of lines) {
        const bytes = Buffer.byteLength(line);
        if (bytes > this.fileBytes) {
          this.stats.dropped++;
          continue;
        }
        if (this.size + pieceBytes + bytes > this.fileBytes) {
          await this.append(piece);
          piece = [];
          pieceBytes = 0;
          if (this.size > 0) await this.rotate();
        }
        piece.push(line);
        pieceBytes += bytes;
      }
      await this.append(piece);
      this.failedWarned = false;
    } catch (error) {
      this.stats.dropped += lines.length;
      // Once per run of failures: a full disk would otherwise log every second.
      if (!this.failedWarned) this.options.log.error(`audit log: ${lines.length} entries could not be written to ${this.path}: ${(error as Error).message}`);
      this.failedWarned = true;
    }
  }

  /** Appends whole lines and fsyncs them: a power cut loses at most what is still in memory. */
  private async append(lines: string[]): Promise<void> {
    if (lines.length === 0) return;
    const text = this.torn ? `\n${lines.join('')}` : lines.join('');
    const handle = await open(this.path, 'a', 0o640);
    try {
      await handle.writeFile(text);
      await handle.sync();
    } finally {
      await handle.close();
    }
    this.size += Buffer.byteLength(text);
    this.torn = false;
    this.stats.written += lines.length;
  }

  private async rotate(): Promise<void> {
    await unlink(this.fileAt(FILES - 1)).catch(() => undefined);
    for (let index = FILES - 2; index >= 0; index--) await rename(this.fileAt(index), this.fileAt(index + 1)).catch(() => undefined);
    this.size = 0;
    this.torn = false;
    this.stats.rotations++;
  }
}

/** One line, or undefined for a line a crash cut short (or anything else that is not an entry). */
function parseEntry(line: string): AuditEntry | undefined {
  try {
    const value: unknown = JSON.parse(line);
    if (typeof value !== 'object' || value === null || typeof (value as AuditEntry).ts !== 'string') return undefined;
    return value as AuditEntry;
  } catch {
    return undefined;
  }
}
