import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { CoalescingSaver } from '../../../src/state/coalescing-saver.js';
import { readJsonState, writeJsonState } from '../../../src/state/json-state.js';
import { tempDir } from '../../helpers/temp-dir.js';

test('a JSON state file round-trips, a missing one is empty state', { timeout: 10_000 }, async () => {
  const dir = tempDir('iogate-state-');
  const path = join(dir, 'sub', 'bdseq.json');
  assert.deepEqual(readJsonState(path), { data: undefined });
  await writeJsonState(path, { bdSeq: 7 });
  assert.deepEqual(readJsonState(path), { data: { bdSeq: 7 } });
  assert.deepEqual(readdirSync(join(dir, 'sub')), ['bdseq.json'], 'no temporary file is left');
});

test('a corrupt JSON state file is reported and kept aside, never thrown', { timeout: 10_000 }, () => {
  const dir = tempDir('iogate-state-');
  const path = join(dir, 'totals.json');
  writeFileSync(path, '{"half":');
  const read = readJsonState(path);
  assert.equal(read.data, undefined);
  assert.match(read.warning ?? '', /not valid JSON/);
  const copies = readdirSync(dir).filter((name) => name.startsWith('totals.json.corrupt-'));
  assert.equal(copies.length, 1);
  assert.equal(readFileSync(join(dir, copies[0]), 'utf8'), '{"half":');
});

test('a saver under steady changes still writes within its delay, and flush writes the newest', { timeout: 10_000 }, async () => {
  const written: number[] = [];
  let wrote: () => void = () => undefined;
  const firstWrite = new Promise<void>((resolve) => (wrote = resolve));
  const saver = new CoalescingSaver<number>('test state', async (value) => {
    written.push(value);
    wrote();
  }, 50);
  let value = 0;
  // Changes keep coming faster than the delay: a save that waited for quiet would never run.
  const ticker = setInterval(() => saver.markDirty(() => ++value), 5);
  await firstWrite;
  clearInterval(ticker);
  assert.equal(written.length, 1);
  saver.markDirty(() => 1000);
  await saver.flush();
  assert.deepEqual(written.at(-1), 1000);
  assert.equal(saver.dirty, false);
});
