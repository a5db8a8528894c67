import assert from 'node:assert/strict';
import { closeSync, openSync, readFileSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { ConfigError } from '../../../src/config/errors.js';
import { readWhenStable } from '../../../src/config/stable-file.js';
import { tempDir } from '../../helpers/temp-dir.js';

// A configuration file is read for a reload only once nothing writes to it:
// a file rewritten in place is read whole or not at all.

const TEXT = Array.from({ length: 40 }, (_, i) => `key${i}: value-${i}`).join('\n') + '\n';

/** Rewrites `file` in place (truncated, then `chunk` bytes every `gapMs`), `rounds` times. */
async function slowInPlaceWriter(file: string, text: string, { chunk = 32, gapMs = 10, rounds = 1 } = {}): Promise<void> {
  for (let round = 0; round < rounds; round++) {
    const fd = openSync(file, 'w');
    try {
      for (let at = 0; at < text.length; at += chunk) {
        writeSync(fd, text.slice(at, at + chunk));
        await new Promise((resolve) => setTimeout(resolve, gapMs));
      }
    } finally {
      closeSync(fd);
    }
  }
}

test('a file rewritten in place is read only once the writer is done, whole', { timeout: 30_000 }, async () => {
  const file = join(tempDir('iogate-stable-'), 'config.yaml');
  writeFileSync(file, TEXT);
  const writing = slowInPlaceWriter(file, TEXT, { rounds: 2 });
  // Started while the writer is at it (its first chunk is out).
  let reads = 0;
  const text = await readWhenStable(file, () => {
    reads++;
    return readFileSync(file, 'utf8');
  }, { settleMs: 200, timeoutMs: 20_000 });
  let writerDone = false;
  await writing.then(() => (writerDone = true));
  assert.equal(text, TEXT);
  assert.ok(writerDone);
  assert.equal(reads, 1, 'read once, when it had settled');
});

test('a file that keeps changing is refused with a ConfigError that says why', { timeout: 30_000 }, async () => {
  const file = join(tempDir('iogate-stable-'), 'config.yaml');
  writeFileSync(file, TEXT);
  let writing = true;
  const writer = (async () => {
    while (writing) await slowInPlaceWriter(file, TEXT, { chunk: 200, gapMs: 20 });
  })();
  try {
    let reads = 0;
    await assert.rejects(
      readWhenStable(file, () => reads++, { settleMs: 200, timeoutMs: 1000 }),
      (error: unknown) => error instanceof ConfigError && /kept changing for 1 s/.test(error.message) && /rename/.test(error.message),
    );
    assert.equal(reads, 0, 'nothing was read for use');
  } finally {
    writing = false;
    await writer;
  }
});

test('a file last written long ago is read at once; one that cannot be stat\'ed is left to the reader to report', { timeout: 10_000 }, async () => {
  const dir = tempDir('iogate-stable-');
  const file = join(dir, 'config.yaml');
  writeFileSync(file, TEXT);
  const { utimesSync } = await import('node:fs');
  const past = new Date(Date.now() - 60_000);
  utimesSync(file, past, past);
  const started = performance.now();
  assert.equal(await readWhenStable(file, () => 'read', { settleMs: 5000 }), 'read');
  assert.ok(performance.now() - started < 1000);
  assert.equal(await readWhenStable(join(dir, 'missing.yaml'), () => 'reported', { settleMs: 5000 }), 'reported');
});
