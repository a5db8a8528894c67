import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { endWithThisProcess } from '../helpers/orphan-guard.mjs';

// The daemon under fuzz: the built bundle, started as the service unit starts
// it (its node options and environment, read from deploy/iogate.service the
// way the benchmarks read them), and watched: any exit, and any line on its
// stderr that only a crash or a bug writes, is a failure.

export const BUNDLE = fileURLToPath(new URL('../../dist/iogate.js', import.meta.url));

/** What only an unhandled error, a rejection, a fatal exit or a leak warning writes. */
const FAILURE_PATTERNS: ReadonlyArray<readonly [RegExp, string]> = [
  [/Unhandled 'error' event/, "unhandled 'error' event"],
  [/^CRITICAL /m, 'critical log line (exception nothing caught)'],
  [/unhandled ?promise ?rejection/i, 'unhandled promise rejection'],
  [/^\s+at .+:\d+:\d+\)?$/m, 'a stack trace'],
  [/FATAL ERROR|out of memory/i, 'V8 fatal error'],
  [/\(node:\d+\) (?!ExperimentalWarning)\w*Warning/, 'a node warning (e.g. a listener leak)'],
];

/** The last this many characters of stderr are kept for the report. */
const KEPT_OUTPUT = 64 * 1024;

export interface WatchedDaemon {
  child: ChildProcess;
  port: number;
  /** The tail of stderr. */
  output(): string;
  /** Resident set size now, in MB (undefined once gone). */
  rssMb(): number | undefined;
  /** Open file descriptors now (sockets included; undefined once gone). */
  openFiles(): number | undefined;
  stop(): Promise<number | null>;
}

interface ServiceSettings {
  serviceNodeOptions(): string[];
  serviceEnvironment(): Record<string, string>;
  inheritedEnvironment(): Record<string, string>;
}

export async function startDaemon(bundle: string, configFile: string, cwd: string, onFailure: (reason: string) => void): Promise<WatchedDaemon> {
  const service = (await import(new URL('../../bench/common.mjs', import.meta.url).href)) as ServiceSettings;
  const nodeOptions = service.serviceNodeOptions();
  const child = endWithThisProcess(spawn(process.execPath, [...nodeOptions, bundle, '--port', '0', '--config', configFile], {
    cwd,
    env: { ...service.inheritedEnvironment(), ...service.serviceEnvironment() },
    stdio: ['ignore', 'ignore', 'pipe'],
  }));
  let output = '';
  let stopping = false;
  let reported = false;
  const fail = (reason: string) => {
    if (reported) return;
    reported = true;
    onFailure(reason);
  };
  const port = await new Promise<number>((resolve, reject) => {
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => {
      output = (output + chunk).slice(-KEPT_OUTPUT);
      const listening = /listening on https?:\/\/[^\s]+:(\d+)/.exec(output);
      if (listening) resolve(Number(listening[1]));
      for (const [pattern, what] of FAILURE_PATTERNS) if (pattern.test(chunk)) fail(`the daemon wrote ${what}`);
    });
    child.once('exit', (code, signal) => {
      reject(new Error(`the daemon exited (${code ?? signal}) before listening:\n${output}`));
      if (!stopping) fail(`the daemon exited with ${code ?? signal}`);
    });
    setTimeout(() => reject(new Error(`the daemon did not listen within 30 s:\n${output}`)), 30_000).unref();
  });
  process.stderr.write(`fuzz: daemon pid ${child.pid} on port ${port}: node ${nodeOptions.join(' ')} ${bundle}\n`);
  return {
    child,
    port,
    output: () => output,
    rssMb() {
      try {
        const kb = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1];
        return kb === undefined ? undefined : Number(kb) / 1024;
      } catch {
        return undefined;
      }
    },
    openFiles() {
      try {
        return readdirSync(`/proc/${child.pid}/fd`).length;
      } catch {
        return undefined;
      }
    },
    async stop() {
      stopping = true;
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      process.kill(child.pid!, 'SIGTERM');
      const timer = setTimeout(() => child.pid && process.kill(child.pid, 'SIGKILL'), 10_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}
