import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { BUNDLE } from './spawn-daemon.js';
import { endWithThisProcess } from './orphan-guard.mjs';

// The built daemon with `apis.tls` on: started on a free port, found by its
// `listening on https://` line (spawnDaemon looks for http:// only).

export interface HttpsDaemon {
  readonly child: ChildProcess;
  readonly port: number;
  /** Everything the daemon wrote to stderr so far. */
  readonly output: () => string;
  /** SIGTERM and wait for the exit (nothing to do when it already exited). */
  stop(): Promise<void>;
}

export async function startHttpsDaemon(config: string, dir: string): Promise<HttpsDaemon> {
  const child = endWithThisProcess(spawn(process.execPath, [BUNDLE, '--config', config, '--port', '0'], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] }));
  let output = '';
  child.stderr!.setEncoding('utf8');
  const port = await new Promise<number>((resolve, reject) => {
    child.stderr!.on('data', (chunk: string) => {
      output += chunk;
      const match = /listening on https:\/\/127\.0\.0\.1:(\d+)/.exec(output);
      if (match) resolve(Number(match[1]));
    });
    child.once('exit', () => reject(new Error(`daemon exited:\n${output}`)));
  });
  return {
    child,
    port,
    output: () => output,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}
