import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { test } from 'node:test';
import { BdSeqStore } from '../../../src/api/sparkplug/bdseq-store.js';
import { tempDir } from '../../helpers/temp-dir.js';

// bdSeq survives a restart, wraps at 255, is written before it is used, and
// is reused only for an attempt that never reached a broker.

test('bdSeq counts per connection across restarts, wraps 255 → 0, and reuses a number no broker saw', async () => {
  const dir = tempDir('iogate-bdseq-');
  const store = new BdSeqStore(dir, 'plant-node');
  assert.equal(await store.next(), 0);
  assert.deepEqual(JSON.parse(readFileSync(store.path, 'utf8')), { bdSeq: 0 });
  assert.equal(await store.next(true), 0, 'the attempt that reached no broker gives its number to the next');
  assert.equal(await store.next(), 1);
  const restarted = new BdSeqStore(dir, 'plant-node');
  assert.equal(await restarted.next(), 2);
  writeFileSync(restarted.path, '{"bdSeq":255}\n');
  assert.equal(await new BdSeqStore(dir, 'plant-node').next(), 0);
  writeFileSync(restarted.path, 'not json');
  const corrupt = new BdSeqStore(dir, 'plant-node');
  assert.match(corrupt.warning ?? '', /not valid JSON/);
  assert.equal(await corrupt.next(), 0);
});

test('a saved bdSeq outside 0..255 is not trusted: the sequence starts again at 0', async () => {
  const dir = tempDir('iogate-bdseq-');
  const store = new BdSeqStore(dir, 'plant-node');
  await store.next();
  writeFileSync(store.path, '{"bdSeq":300}\n');
  assert.equal(await new BdSeqStore(dir, 'plant-node').next(), 0);
});
