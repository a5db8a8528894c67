import assert from 'node:assert/strict';
import { chmodSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
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

test('a state file is replaced, never rewritten in place: a reader of the old one never sees a torn file', { timeout: 10_000 }, async () => {
  const dir = tempDir('iogate-state-');
  const path = join(dir, 'outputs.json');
  await writeJsonState(path, { pulses: { 'do/1_01': 1 } });
  const before = statSync(path).ino;
  await writeJsonState(path, { pulses: {} });
  assert.notEqual(statSync(path).ino, before, 'a new file was renamed over the old one');
  assert.deepEqual(readJsonState(path), { data: { pulses: {} } });
});

test('a state file made private by its owner stays private when rewritten', { timeout: 10_000 }, async () => {
  const dir = tempDir('iogate-state-');
  const path = join(dir, 'outputs.json');
  await writeJsonState(path, { a: 1 });
  chmodSync(path, 0o600);
  await writeJsonState(path, { a: 2 });
  assert.equal(statSync(path).mode & 0o777, 0o600);
});

test('a save that failed keeps its changes: the next flush writes them', { timeout: 10_000 }, async () => {
  const written: number[] = [];
  let fail = true;
  const saver = new CoalescingSaver<number>('test state', async (value) => {
    if (fail) throw new Error('disk full');
    written.push(value);
  }, 10_000, () => {});
  saver.markDirty(() => 1);
  await saver.flush();
  assert.equal(saver.dirty, true, 'the change is still waiting');
  fail = false;
  await saver.flush();
  assert.deepEqual(written, [1]);
});
