import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { endWithThisProcess } from './orphan-guard.mjs';

// A virtual null-modem cable: socat joins two ptys, reachable under stable
// symlink paths, so a test can unplug the "cable" (stop socat) and plug it
// back in (start it again with the same paths).

export interface PtyPair {
  a: string;
  b: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

export async function startPtyPair(a: string, b: string): Promise<PtyPair> {
  const child = endWithThisProcess(spawn('socat', ['-d', '-d', `pty,raw,echo=0,link=${a}`, `pty,raw,echo=0,link=${b}`], {
    stdio: ['ignore', 'ignore', 'pipe'],
  }));
  let output = '';
  await new Promise<void>((resolve, reject) => {
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => {
      output += chunk;
      if (output.includes('starting data transfer loop')) resolve();
    });
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`socat exited with ${code}: ${output}`)));
  });
  return {
    a,
    b,
    child,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}
