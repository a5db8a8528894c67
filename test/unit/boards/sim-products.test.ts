import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { test } from 'node:test';
import { SIM_BUNDLE } from '../../helpers/sim-process.js';
import { endWithThisProcess } from '../../helpers/orphan-guard.mjs';

// iogate-sim reads --model as the daemon reads `model:`: a board id, or a
// product name that stands for its boards at consecutive slave ids.

async function simLine(args: string[]): Promise<{ line: string; code: number | null }> {
  const child = endWithThisProcess(spawn(process.execPath, [SIM_BUNDLE, ...args], { stdio: ['ignore', 'ignore', 'pipe'] }));
  let output = '';
  child.stderr!.setEncoding('utf8');
  const serving = new Promise<string>((resolve) => {
    child.stderr!.on('data', (chunk: string) => {
      output += chunk;
      const match = /^serving .*$/m.exec(output);
      if (match) resolve(match[0]);
    });
  });
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  const first = await Promise.race([serving, exited]);
  if (typeof first === 'string') {
    child.kill('SIGTERM');
    return { line: first, code: await exited };
  }
  return { line: output, code: first };
}

test('a product name serves its boards at consecutive slave ids', async () => {
  const { line, code } = await simLine(['--model', 'M503', '--slave-id', '4', '--model', '01', '--slave-id', '1', '--tcp', '127.0.0.1:0']);
  assert.match(line, /^serving 00@4, 0F@5, 01@1 on tcp 127\.0\.0\.1:\d+$/);
  assert.equal(code, 0);
});

test('an unknown name, a product past slave id 247 or one overlapping another board is a usage error', async () => {
  const unknown = await simLine(['--model', 'M999', '--slave-id', '1', '--tcp', '127.0.0.1:0']);
  assert.equal(unknown.code, 2);
  assert.match(unknown.line, /unknown model 'M999' \(boards: .*00.*; products: .*M503/);
  const high = await simLine(['--model', 'L203', '--slave-id', '246', '--tcp', '127.0.0.1:0']);
  assert.equal(high.code, 2);
  assert.match(high.line, /--model L203 is 3 boards at slave ids 246\.\.248: above 247/);
  const overlap = await simLine(['--model', 'M503', '--slave-id', '1', '--model', '00', '--slave-id', '2', '--tcp', '127.0.0.1:0']);
  assert.equal(overlap.code, 2);
  assert.match(overlap.line, /--slave-id values must differ/);
});
