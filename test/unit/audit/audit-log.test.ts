import assert from 'node:assert/strict';
import { readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { AuditLog } from '../../../src/state/audit-log.js';
import { createLogger } from '../../../src/logging/log.js';
import type { AuditEntry } from '../../../src/registry/audit-trail.js';
import { tempDir } from '../../helpers/temp-dir.js';

// The audit log's files: bounded in total whatever is written, rotated, and
// readable whatever a crash left behind.

const quiet = createLogger('CRITICAL', () => undefined);

function entry(index: number): AuditEntry {
  return { ts: new Date(1_700_000_000_000 + index).toISOString(), who: 'scada', from: '10.0.0.7', interface: 'rest', target: 'do/1_01', params: { value: index % 2, note: 'x'.repeat(100) }, result: 'ok' };
}

test('filled far past max_mb: the files stay within it, rotated, and the newest entries are kept', async () => {
  const dir = tempDir('iogate-audit-');
  const maxBytes = 64 * 1024;
  const log = await AuditLog.open({ dir, maxBytes, log: quiet, flushMs: 60_000 });
  for (let index = 0; index < 5000; index++) {
    log.record(entry(index));
    if (index % 100 === 99) await log.flush();
  }
  await log.close();
  const files = readdirSync(dir).filter((name) => name.startsWith('audit'));
  assert.deepEqual(files.sort(), ['audit.1.jsonl', 'audit.2.jsonl', 'audit.3.jsonl', 'audit.jsonl']);
  const total = files.reduce((sum, name) => sum + statSync(join(dir, name)).size, 0);
  assert.ok(total <= maxBytes, `${total} bytes on disk, bound ${maxBytes}`);
  assert.ok(log.stats.rotations > 10);
  const reopened = await AuditLog.open({ dir, maxBytes, log: quiet, flushMs: 60_000 });
  const latest = await reopened.read(undefined, 10);
  assert.deepEqual(latest.map((e) => (e.params as { value: number }).value), [0, 1, 0, 1, 0, 1, 0, 1, 0, 1]);
  assert.equal(latest.at(-1)!.ts, entry(4999).ts);
  await reopened.close();
});

test('garbage and torn lines are skipped; entries not yet flushed are read too', async () => {
  const dir = tempDir('iogate-audit-');
  writeFileSync(join(dir, 'audit.jsonl'), `${JSON.stringify(entry(1))}\nnot json\n[1,2]\n\u0000\u0000\n${JSON.stringify(entry(2)).slice(0, 40)}`);
  const log = await AuditLog.open({ dir, maxBytes: 1024 * 1024, log: quiet, flushMs: 60_000 });
  log.record(entry(3));
  assert.deepEqual((await log.read(undefined, 100)).map((e) => e.ts), [entry(1).ts, entry(3).ts]);
  await log.close();
  const reopened = await AuditLog.open({ dir, maxBytes: 1024 * 1024, log: quiet, flushMs: 60_000 });
  assert.deepEqual((await reopened.read(Date.parse(entry(1).ts), 100)).map((e) => e.ts), [entry(3).ts]);
  await reopened.close();
});

test('recording never waits for the disk, and a flood past the buffer costs counted entries, not memory', async () => {
  const dir = tempDir('iogate-audit-');
  const log = await AuditLog.open({ dir: join(dir, 'sub'), maxBytes: 1024 * 1024, log: quiet, flushMs: 60_000 });
  const started = performance.now();
  for (let index = 0; index < 100_000; index++) log.record(entry(index));
  const perEntryUs = ((performance.now() - started) * 1000) / 100_000;
  assert.ok(perEntryUs < 50, `${perEntryUs.toFixed(1)} µs an entry`);
  assert.ok(log.stats.dropped > 0, 'past the 4 MB buffer entries are dropped and counted');
  await log.close();
  assert.ok(log.stats.written > 0);
});
