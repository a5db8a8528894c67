import { once } from 'node:events';
import { renameSync, writeFileSync } from 'node:fs';
import type { SpawnedDaemon } from './spawn-daemon.js';

// SIGHUP storms against a spawned daemon: the configuration is replaced
// whole (written beside it and renamed over it, so no reload reads half a
// file) and a SIGHUP follows within milliseconds, many times over.

/** Writes `text` to `file` atomically (temporary file, rename). */
export function replaceFile(file: string, text: string): void {
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, text);
  renameSync(temporary, file);
}

/** `count` reloads, configuration `configText(i)` for the i-th, a few milliseconds apart (some back to back). */
export async function sighupStorm(daemon: SpawnedDaemon, file: string, count: number, configText: (i: number) => string): Promise<void> {
  for (let i = 0; i < count; i++) {
    replaceFile(file, configText(i));
    daemon.child.kill('SIGHUP');
    await new Promise((resolve) => setTimeout(resolve, i % 4 === 0 ? 0 : 1 + (i % 5)));
  }
}

/**
 * Resolves once every SIGHUP the daemon logged was dealt with (applied or
 * refused); rejects if the daemon exits or `timeoutMs` passes first.
 */
export async function reloadsSettled(daemon: SpawnedDaemon, timeoutMs = 60_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const output = daemon.output();
    const asked = count(output, /SIGHUP: reloading the configuration/g);
    const done = count(output, /configuration reloaded from|reload refused|reload failed/g);
    if (asked > 0 && done >= asked) return done;
    if (daemon.child.exitCode !== null || daemon.child.signalCode !== null) throw new Error(`the daemon exited (${daemon.child.exitCode ?? daemon.child.signalCode}):\n${output.slice(-4000)}`);
    if (Date.now() > deadline) throw new Error(`${done} of ${asked} reloads done after ${timeoutMs} ms:\n${output.slice(-4000)}`);
    await Promise.race([once(daemon.child.stderr!, 'data'), new Promise((resolve) => setTimeout(resolve, 250))]);
  }
}

/** Resolves after `ms` if the daemon is still running; rejects as soon as it exits. */
export function staysAlive(daemon: SpawnedDaemon, ms: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const exited = (code: number | null, signal: string | null) => {
      clearTimeout(timer);
      reject(new Error(`the daemon exited (${code ?? signal}):\n${daemon.output().slice(-4000)}`));
    };
    const timer = setTimeout(() => {
      daemon.child.off('exit', exited);
      resolve();
    }, ms);
    if (daemon.child.exitCode !== null || daemon.child.signalCode !== null) return exited(daemon.child.exitCode, daemon.child.signalCode);
    daemon.child.once('exit', exited);
  });
}

function count(text: string, pattern: RegExp): number {
  return text.match(pattern)?.length ?? 0;
}
