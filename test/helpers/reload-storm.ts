import { renameSync, utimesSync, writeFileSync } from 'node:fs';
import type { SpawnedDaemon } from './spawn-daemon.js';

// SIGHUP storms against a spawned daemon: the configuration is replaced
// whole (written beside it and renamed over it, so no reload reads half a
// file) and a SIGHUP follows within milliseconds, many times over.

/**
 * The board a storm runs over, as the config's last lines: a Neuron `00` on
 * the in-memory simulator, scanned at 10 Hz, so every reload rebuilds a bus
 * that is busy.
 */
export const STORM_BOARD = ['comm_channels:', '  A:', '    type: SIMULATOR', '    toggle_ms: 0', '    devices:', '      1: {model: "00", scan_frequency: 10}'];

/**
 * Writes `text` to `file` atomically (temporary file, rename), dated a minute
 * back: a reload takes a file modified within the last half second only once
 * it stayed unchanged that long (src/config/stable-file.ts), and a test that
 * reloads many times at once would otherwise wait that long each time.
 */
export function replaceFile(file: string, text: string): void {
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, text);
  const past = new Date(Date.now() - 60_000);
  utimesSync(temporary, past, past);
  renameSync(temporary, file);
}

/**
 * `count` reloads, configuration `configText(i)` for the i-th: each written,
 * then 1 to 3 SIGHUPs within a few milliseconds (which share one reload), and
 * the next one as soon as that reload was applied, so a component restarted
 * by one reload is restarted again while it is still starting.
 */
export async function sighupStorm(daemon: SpawnedDaemon, file: string, count: number, configText: (i: number) => string): Promise<void> {
  for (let i = 0; i < count; i++) {
    const applied = reloadsApplied(daemon);
    replaceFile(file, configText(i));
    for (let burst = 1 + (i % 3); burst > 0; burst--) {
      daemon.child.kill('SIGHUP');
      if (burst > 1) await new Promise((resolve) => setTimeout(resolve, i % 4));
    }
    const deadline = Date.now() + 10_000;
    while (reloadsApplied(daemon) === applied) {
      if (daemon.child.exitCode !== null || daemon.child.signalCode !== null) return;
      if (Date.now() > deadline) throw new Error(`reload ${i + 1} of the storm not applied within 10 s:\n${daemon.output().slice(-3000)}`);
      await moreOutput(daemon, 20);
    }
  }
}

/** Resolves at the daemon's next output or after `ms`, whichever comes first, leaving no listener behind. */
function moreOutput(daemon: SpawnedDaemon, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const stderr = daemon.child.stderr!;
    const done = () => {
      clearTimeout(timer);
      stderr.off('data', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    stderr.on('data', done);
  });
}

function reloadsApplied(daemon: SpawnedDaemon): number {
  return count(daemon.output(), /configuration reloaded from/g);
}

/**
 * Resolves once the last SIGHUP the daemon logged was dealt with: a reload
 * applied or refused after it (SIGHUPs that arrive while a reload waits share
 * it, so there are fewer reloads than signals); rejects if the daemon exits
 * or `timeoutMs` passes first. Resolves with the number of reloads done.
 */
export async function reloadsSettled(daemon: SpawnedDaemon, timeoutMs = 60_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const output = daemon.output();
    const asked = output.lastIndexOf('SIGHUP: reloading the configuration');
    const done = Math.max(output.lastIndexOf('configuration reloaded from'), output.lastIndexOf('reload refused'), output.lastIndexOf('reload failed'));
    if (asked >= 0 && done > asked) return count(output, /configuration reloaded from|reload refused|reload failed/g);
    if (daemon.child.exitCode !== null || daemon.child.signalCode !== null) throw new Error(`the daemon exited (${daemon.child.exitCode ?? daemon.child.signalCode}):\n${output.slice(-4000)}`);
    if (Date.now() > deadline) throw new Error(`the last SIGHUP not dealt with after ${timeoutMs} ms:\n${output.slice(-4000)}`);
    await moreOutput(daemon, 250);
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
