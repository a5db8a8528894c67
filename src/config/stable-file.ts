import { readFileSync, statSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { ConfigError } from './errors.js';

// A reload must apply a configuration file only once it is written whole. A
// file rewritten in place (truncated, then written piece by piece) can be
// read at any point of the writing, and a truncated YAML file is very often
// still valid YAML: a file cut off before its `auth:` section is a file
// without authentication. Parsing cannot tell, so a file counts as stable
// only when nothing wrote to it for a while: its size, modification and
// change times, inode and content stayed the same across two reads
// `settleMs` apart (100 ms apart when it was last modified longer ago than
// that), and its stamp again after it was parsed. A writer that pauses longer than `settleMs` in
// the middle of a file cannot be told from one that finished: writing the
// file beside the old one and renaming it over it (what editors and
// configuration managers do) is the way to change it safely.

/**
 * How long a file must have stayed unchanged before it is read for a reload:
 * longer than a writer plausibly pauses mid-file (a loaded machine stalled a
 * writer for over 200 ms in the fuzzer), short enough for a reload by hand.
 */
export const SETTLE_MS = 2000;
/** A file still changing after this long is not applied at all. */
export const STABLE_TIMEOUT_MS = 10_000;
const POLL_MS = 50;
/**
 * A file last modified longer than the settle time ago is still read twice
 * this far apart: a truncation in progress shows the file empty with its old
 * times for a moment (the kernel sets the size first), and a stamp seen only
 * once could be such a moment.
 */
const CONFIRM_MS = 100;

/** What changes whenever a file is written or replaced. */
interface Stamp {
  ino: bigint;
  size: bigint;
  mtimeNs: bigint;
  ctimeNs: bigint;
}

export interface StableOptions {
  settleMs?: number;
  timeoutMs?: number;
  /** Called once when the file is too fresh to be read at once (to say why the reload waits). */
  onWait?: (modifiedMsAgo: number) => void;
}

/**
 * Calls `read` (which reads `file` and whatever it names) once `file` is
 * stable, and again if the file changed while `read` ran. Throws ConfigError
 * when the file kept changing for `timeoutMs`; errors of `read` pass through.
 * A file that cannot be stat'ed is left to `read` to report.
 */
export async function readWhenStable<T>(file: string, read: () => T, { settleMs = SETTLE_MS, timeoutMs = STABLE_TIMEOUT_MS, onWait }: StableOptions = {}): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  let waiting = onWait;
  const waitOnce = (age: number) => {
    waiting?.(age);
    waiting = undefined;
  };
  for (;;) {
    const stamp = await settled(file, settleMs, deadline, timeoutMs, waitOnce);
    if (stamp === undefined) return read();
    const result = read();
    const after = stampOf(file);
    if (after !== undefined && sameStamp(stamp, after)) return result;
    if (performance.now() >= deadline) throw stillChanging(file, timeoutMs);
  }
}

/** The stamp of `file` once it stayed unchanged for `settleMs`; undefined when it cannot be stat'ed. */
async function settled(file: string, settleMs: number, deadline: number, timeoutMs: number, onWait: (age: number) => void): Promise<Stamp | undefined> {
  let seen: { stamp: Stamp; text: string; since: number } | undefined;
  for (;;) {
    const before = stampOf(file);
    if (before === undefined) return undefined;
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      return undefined;
    }
    const after = stampOf(file);
    if (after === undefined) return undefined;
    const now = performance.now();
    const age = Date.now() - Number(after.mtimeNs / 1_000_000n);
    if (sameStamp(before, after)) {
      if (seen !== undefined && sameStamp(seen.stamp, after) && seen.text === text) {
        const unchangedFor = now - seen.since;
        // Last written long enough ago (by the wall clock, which also stamps files): only confirmed
        // once more a little later, as a truncation shows its new size before its new times.
        if (unchangedFor >= settleMs || (age >= settleMs && unchangedFor >= CONFIRM_MS)) return after;
      } else {
        seen = { stamp: after, text, since: now };
      }
    } else {
      seen = undefined;
    }
    if (now >= deadline) throw stillChanging(file, timeoutMs);
    if (age < settleMs) onWait(age);
    await sleep(POLL_MS);
  }
}

function stampOf(file: string): Stamp | undefined {
  try {
    const stat = statSync(file, { bigint: true });
    return { ino: stat.ino, size: stat.size, mtimeNs: stat.mtimeNs, ctimeNs: stat.ctimeNs };
  } catch {
    return undefined;
  }
}

function sameStamp(a: Stamp, b: Stamp): boolean {
  return a.ino === b.ino && a.size === b.size && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs;
}

function stillChanging(file: string, timeoutMs: number): ConfigError {
  return new ConfigError(
    [`${file} kept changing for ${timeoutMs / 1000} s (is it being written in place?); not applied. Write the new file beside it and rename it over the old one.`],
    'The configuration file is still being written',
  );
}
