import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { test } from 'node:test';
import { tempDir } from '../../helpers/temp-dir.js';

// tempDir's promise: whatever a test process made with it is gone once the
// process has exited, however it ended, and the removal itself never fails.

const CHILD = resolve('test/support/temp-dir-child.ts');

/** Runs the child with its own TMPDIR, so everything it makes lands in a directory this test can list. */
async function runChild(how: string): Promise<{ paths: string[]; code: number | null; stderr: string; tmp: string }> {
  const tmp = tempDir('iogate-tempdir-test-');
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, how], { env: { ...process.env, TMPDIR: tmp }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const [code] = (await once(child, 'exit')) as [number | null];
  const paths = JSON.parse(stdout.split('\n')[0]!) as string[];
  return { paths, code, stderr, tmp };
}

/** Our directories left in `tmp` (tsx keeps its compile cache there too, under its own name). */
const leftIn = (tmp: string): string[] => readdirSync(tmp).filter((name) => name.startsWith('iogate-'));

test('the directories a process made, one of them with files in a subfolder, are gone after it exits', async () => {
  const { paths, code, stderr, tmp } = await runChild('exit');
  assert.equal(code, 0, stderr);
  assert.equal(paths.length, 2);
  for (const path of paths) {
    assert.ok(path.startsWith(`${tmp}/iogate-tempdir-check-`), `${path} is under the child's TMPDIR with its prefix`);
    assert.equal(existsSync(path), false, `${path} removed`);
  }
  assert.deepEqual(leftIn(tmp), [], 'nothing else left behind');
});

test('a directory the test removed itself does not make the exit hook throw, and the other one still goes', async () => {
  const { paths, code, stderr, tmp } = await runChild('removed-early');
  assert.equal(code, 0, stderr);
  assert.equal(stderr, '');
  for (const path of paths) assert.equal(existsSync(path), false, `${path} removed`);
  assert.deepEqual(leftIn(tmp), []);
});

test('a process ending in an uncaught error (a failing test file) still removes its directories', async () => {
  const { paths, code, stderr, tmp } = await runChild('throws');
  assert.equal(code, 1);
  assert.match(stderr, /a failing test/);
  for (const path of paths) assert.equal(existsSync(path), false, `${path} removed`);
  assert.deepEqual(leftIn(tmp), []);
});

test('each call gives a fresh directory with the prefix, existing until exit', () => {
  const first = tempDir('iogate-tempdir-test-');
  const second = tempDir('iogate-tempdir-test-');
  assert.notEqual(first, second);
  assert.ok(existsSync(first) && existsSync(second));
});

test('no test, fuzz or bench file makes a temp directory except through tempDir', () => {
  const helpers = new Set(['test/helpers/temp-dir.ts', 'bench/common.mjs', 'test/unit/helpers/temp-dir.test.ts']);
  const offenders: string[] = [];
  const visit = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory()) {
        if (entry.name !== 'node_modules' && entry.name !== 'results') visit(path);
      } else if (/\.(ts|mts|mjs|js|cjs)$/.test(entry.name) && !helpers.has(path) && /\bmkdtemp(Sync)?\(/.test(readFileSync(path, 'utf8'))) {
        offenders.push(path);
      }
    }
  };
  visit('test');
  visit('bench');
  assert.deepEqual(offenders, [], 'these call mkdtemp directly; use tempDir (test/helpers/temp-dir.ts or bench/common.mjs), which removes the directory at exit');
});
