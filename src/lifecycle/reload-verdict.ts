import { readFileSync, watch } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../state/atomic-file.js';

// How `iogate --reload` (the unit's ExecReload) learns whether the running
// daemon applied a reload. A signal carries no answer, and `kill -HUP` alone
// made `systemctl reload iogate` succeed whatever the daemon then did. After
// each reload that a SIGHUP asked for, the daemon writes its verdict to a small
// file; the command signals the daemon, waits for a verdict of a reload that
// began after its signal, prints it and exits non-zero on a refusal.

export interface ReloadVerdict {
  /** The daemon that wrote it: a verdict of an earlier process never answers. */
  pid: number;
  /** Counts the verdicts of this process, so a waiting command sees a new one. */
  seq: number;
  /** Wall-clock ms when this reload began to read the file. */
  startedAt: number;
  applied: boolean;
  /** What changed, or why nothing did. */
  message: string;
}

export const VERDICT_FILE = 'reload-verdict.json';

/**
 * Where the verdict goes: the service's runtime directory (`RuntimeDirectory=`
 * in the unit; systemd hands it to ExecReload too), else the state directory
 * of the configuration, which a copied daemon and its command both read.
 */
export function verdictDirectory(stateDir: string, env: NodeJS.ProcessEnv = process.env): string {
  return env['RUNTIME_DIRECTORY']?.split(':')[0] || stateDir;
}

export class VerdictWriter {
  private seq = 0;
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly pid: number,
    private readonly onError: (message: string) => void,
  ) {}

  /** Writes in order; a failed write is logged (the reload itself stands). */
  record(directory: string, verdict: Omit<ReloadVerdict, 'pid' | 'seq'>): Promise<void> {
    const text = `${JSON.stringify({ pid: this.pid, seq: ++this.seq, ...verdict } satisfies ReloadVerdict)}\n`;
    this.writing = this.writing.then(() =>
      writeFileAtomic(join(directory, VERDICT_FILE), text).catch((error: Error) => this.onError(`reload verdict not written to ${directory}: ${error.message}`)),
    );
    return this.writing;
  }
}

export function readVerdict(directory: string): ReloadVerdict | undefined {
  try {
    const value = JSON.parse(readFileSync(join(directory, VERDICT_FILE), 'utf8')) as Partial<ReloadVerdict>;
    const valid = typeof value.pid === 'number' && typeof value.seq === 'number' && typeof value.startedAt === 'number';
    return valid && typeof value.applied === 'boolean' && typeof value.message === 'string' ? (value as ReloadVerdict) : undefined;
  } catch {
    return undefined;
  }
}

export class ReloadTimeout extends Error {}

/**
 * Signals `pid` and resolves with the verdict of the first reload that began
 * after the signal. The daemon waits for a file that is still being written,
 * and a reload in progress finishes first, so the bound is generous.
 */
export async function requestReload(pid: number, directory: string, timeoutMs: number, signal: (pid: number) => void = (target) => process.kill(target, 'SIGHUP')): Promise<ReloadVerdict> {
  const before = readVerdict(directory);
  // Both stamps come from this machine's wall clock, read by two processes; the daemon's is taken when the signal arrives.
  const sentAt = Date.now();
  const answered = (verdict: ReloadVerdict | undefined): verdict is ReloadVerdict =>
    verdict !== undefined && verdict.pid === pid && (before?.pid !== pid || verdict.seq > before.seq) && verdict.startedAt >= sentAt;
  return new Promise<ReloadVerdict>((resolve, reject) => {
    // The directory, not the file: the verdict replaces the file by a rename.
    const watcher = watch(directory, () => check());
    // A missed event (or a file system without them) costs at most this long.
    const poll = setInterval(() => check(), 250);
    const deadline = setTimeout(() => finish(new ReloadTimeout(`no answer from process ${pid} within ${timeoutMs / 1000} s`)), timeoutMs);
    watcher.on('error', () => undefined);
    function check(): void {
      const verdict = readVerdict(directory);
      if (answered(verdict)) finish(verdict);
    }
    function finish(result: ReloadVerdict | Error): void {
      watcher.close();
      clearInterval(poll);
      clearTimeout(deadline);
      if (result instanceof Error) reject(result);
      else resolve(result);
    }
    try {
      signal(pid);
    } catch (error) {
      finish(new Error(`cannot signal process ${pid}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`));
    }
  });
}
