import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { assertConfinedArgs } from './confined-config.js';
import { startTap } from './prism.js';
import { tempDir } from './temp-dir.js';
import { endWithThisProcess } from './orphan-guard.mjs';

// Runs the built daemon (dist/iogate.js) as a real process and waits for its
// "listening on" line, so tests talk to it exactly as a user's client would.

export const BUNDLE = fileURLToPath(new URL('../../dist/iogate.js', import.meta.url));

export interface SpawnedDaemon {
  child: ChildProcess;
  baseUrl: string;
  /**
   * Where tests send HTTP API requests: the daemon, or in the peer suites with
   * IOGATE_PRISM set the validating proxies in front of it (test/helpers/prism.ts).
   * Browsers, WebSockets and raw-socket tests use baseUrl.
   */
  apiUrl: string;
  /** Everything the daemon wrote to stderr so far. */
  output(): string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Resolves once `check` holds (polled every 25 ms); after `limitMs` it fails
 * naming `what`, with the daemon's log, which usually says why.
 */
export async function untilShowingLog(daemon: SpawnedDaemon | undefined, check: () => Promise<boolean>, what: string, limitMs = 8000): Promise<void> {
  const deadline = Date.now() + limitMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; log:\n${daemon?.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

export interface DaemonExit {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the built daemon with `args` until it ends by itself (`--check-config`,
 * a start-up it refuses) and returns its exit code and what it printed. It
 * runs in a fresh directory unless told, so nothing it saves lands in the clone.
 */
export async function runDaemonToExit(args: string[], { cwd = tempDir('iogate-cwd-') }: { cwd?: string } = {}): Promise<DaemonExit> {
  const child = endWithThisProcess(spawn(process.execPath, [BUNDLE, ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] }));
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, stdout, stderr };
}

export async function spawnDaemon(
  args: string[] = [],
  {
    node = process.execPath,
    cwd,
    bundle = BUNDLE,
    nodeOptions = [],
    filePort = false,
    tap = true,
    prefix = [],
  }: {
    node?: string;
    cwd?: string;
    bundle?: string;
    /** node's own flags, before the bundle */ nodeOptions?: string[];
    /** No `--port 0`: the daemon listens on the file's port (a test that changes it by a reload). */
    filePort?: boolean;
    /** false: no validating proxies in front of it, for daemons whose HTTP API the test does not use (a fleet of them). */
    tap?: boolean;
    /** A command the daemon runs under, e.g. `ip netns exec <name>` (it must exec, so the PID is the daemon's). */
    prefix?: string[];
  } = {},
): Promise<SpawnedDaemon> {
  assertConfinedArgs(args);
  // Without a cwd of its own the built-in configuration would save alias.yaml into the clone.
  const argv = [...prefix, node, ...nodeOptions, bundle, ...(filePort ? [] : ['--port', '0']), ...args];
  const dir = cwd ?? tempDir('iogate-cwd-');
  // Without a configuration the daemon keeps its state under $XDG_STATE_HOME: one per daemon, as the cwd is.
  const child = endWithThisProcess(spawn(argv[0]!, argv.slice(1), { cwd: dir, env: { ...process.env, XDG_STATE_HOME: dir }, stdio: ['ignore', 'pipe', 'pipe'] }));
  let output = '';
  const listening = new Promise<string>((resolve, reject) => {
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => {
      output += chunk;
      const match = /listening on (http:\/\/[^\s]+)/.exec(output);
      if (match) resolve(match[1]!);
    });
    child.once('exit', (code) => reject(new Error(`daemon exited with ${code} before listening:\n${output}`)));
  });
  const baseUrl = await listening;
  const proxy = await (tap ? startTap(baseUrl) : Promise.resolve({ url: baseUrl, stop: async () => {} })).catch((error: Error) => {
    child.kill('SIGKILL');
    throw error;
  });
  return {
    child,
    baseUrl,
    apiUrl: proxy.url,
    output: () => output,
    async stop(signal = 'SIGTERM') {
      let code = child.exitCode;
      if (child.exitCode === null && child.signalCode === null) {
        child.kill(signal);
        [code] = (await once(child, 'exit')) as [number | null];
      }
      // Throws when iogate's OpenAPI document was violated by what went through the tap.
      await proxy.stop();
      return code;
    },
  };
}
