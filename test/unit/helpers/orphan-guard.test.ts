import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { test } from 'node:test';

// test/helpers/orphan-guard.mjs's promise: the simulators, daemons and other
// processes a test process started end with it, however it ends, even by a
// SIGKILL it cannot see (node:test's deadline for a file).

const PARENT = resolve('test/support/orphan-guard-parent.ts');

/** Whether `pid` still runs (a zombie nobody reaped yet has ended). */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/** Starts the test-like parent with `args`, and resolves with it and the PIDs of what it started. */
async function startParent(args: string[]) {
  const parent = spawn(process.execPath, ['--import', 'tsx', PARENT, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  parent.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = once(parent, 'exit');
  const pids = await new Promise<number[]>((resolve, reject) => {
    parent.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      if (stdout.includes('\n')) resolve(JSON.parse(stdout.split('\n')[0]!) as number[]);
    });
    parent.once('exit', (code) => reject(new Error(`the parent exited with ${code} before starting its children:\n${stderr}`)));
  });
  return { parent, pids, exited, stderr: () => stderr };
}

/**
 * Resolves once none of `pids` runs; fails after `ms` naming those left. Either way they are
 * killed at the end, so a broken guard does not leave this test's own orphans behind.
 */
async function allEnd(pids: number[], ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  try {
    while (pids.some(running)) {
      if (Date.now() > deadline) assert.fail(`still running ${ms} ms after their parent ended: ${pids.filter(running).join(', ')}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  } finally {
    for (const pid of pids.filter(running)) process.kill(pid, 'SIGKILL');
  }
}

test('a SIGKILL of the test process ends its simulator, its daemon and a child with a child of its own', { skip: process.platform !== 'linux' && 'reads /proc' }, async () => {
  const { parent, pids, exited } = await startParent(['wait', 'daemon', 'tree']);
  assert.equal(pids.length, 4);
  assert.ok(pids.every(running), 'all started');
  parent.kill('SIGKILL');
  await exited;
  await allEnd(pids);
});

test('a SIGTERM of the test process (no handler: no exit hooks run) ends its simulator', { skip: process.platform !== 'linux' && 'reads /proc' }, async () => {
  const { parent, pids, exited } = await startParent(['wait']);
  parent.kill('SIGTERM');
  await exited;
  await allEnd(pids);
});

test('a test process ending in an uncaught error ends its simulator', { skip: process.platform !== 'linux' && 'reads /proc' }, async () => {
  const { pids, exited, stderr } = await startParent(['throws']);
  const [code] = (await exited) as [number | null];
  assert.equal(code, 1);
  assert.match(stderr(), /a failing test/);
  await allEnd(pids);
});
