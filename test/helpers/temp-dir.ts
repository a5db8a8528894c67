import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// Every directory a test writes into comes from here: a fresh one under the
// system temp dir, removed when the test process exits. node:test runs each
// file in a process of its own, so a file's directories live exactly as long
// as its tests (and the daemons, brokers and simulators they stop in their
// after-hooks), and a CI machine's /tmp does not fill up run after run.

const made: string[] = [];
let hooked = false;

/** A fresh directory `<tmpdir>/<prefix>XXXXXX`, removed with everything in it when the process exits. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  if (!hooked) {
    hooked = true;
    process.on('exit', removeTempDirs);
  }
  return dir;
}

/**
 * Removes every directory tempDir made so far. Never throws: one already gone
 * (a test removed it itself) or one a stray child still writes into must not
 * turn a passing run into a failing one at its very end.
 */
function removeTempDirs(): void {
  for (const dir of made.splice(0)) {
    try {
      rmSync(dir, { recursive: true, force: true, maxRetries: 2 });
    } catch {
      // Left behind; nothing a test can do about it at exit.
    }
  }
}

/**
 * Where a suite puts screenshots for a person to look at: IOGATE_CLIENTS_ARTIFACTS
 * when set (kept), else a temp directory removed at exit like any other.
 */
export function artifactsDir(prefix: string): string {
  const kept = process.env['IOGATE_CLIENTS_ARTIFACTS'];
  if (kept === undefined || kept === '') return tempDir(prefix);
  mkdirSync(kept, { recursive: true });
  return kept;
}
