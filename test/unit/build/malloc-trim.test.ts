import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, test } from 'node:test';
import { loadMallocTrim, mallocTrimPath } from '../../../src/memory/malloc-trim.js';
import { node18 } from '../../helpers/node18.js';
import { BUNDLE, spawnDaemon } from '../../helpers/spawn-daemon.js';
import { tempDir } from '../../helpers/temp-dir.js';

// The malloc_trim addon (src/memory/malloc-trim.c), as build.mjs leaves it
// beside the bundle when the machine has a C compiler. Without one the addon
// is absent and the daemon must run all the same; CI, which has a compiler,
// sets IOGATE_REQUIRE_NATIVE=1 so that an addon that silently failed to build
// fails here instead of being skipped.

const DIST = dirname(BUNDLE);
const ADDON = mallocTrimPath(DIST);
const built = existsSync(ADDON);
const skip = built || process.env['IOGATE_REQUIRE_NATIVE'] === '1' ? false : `${ADDON} not built (no C compiler)`;

/** A bundle copy in a folder of its own, with `addon` (bytes or a file to copy) where the loader looks. */
function bundleWith(addon: Buffer | string | undefined): string {
  const dir = tempDir('iogate-trim-');
  copyFileSync(BUNDLE, join(dir, 'iogate.js'));
  if (addon !== undefined) {
    mkdirSync(dirname(mallocTrimPath(dir)), { recursive: true });
    if (typeof addon === 'string') copyFileSync(addon, mallocTrimPath(dir));
    else writeFileSync(mallocTrimPath(dir), addon);
  }
  return dir;
}

// Fragments the C heap the way a write load does (many small buffers freed,
// a few kept alive between them), then reads private memory before and after
// malloc_trim. Buffers of 4 KB are ArrayBuffer backing stores that Node
// allocates with malloc, below glibc's mmap threshold, so they live in the heap.
const FRAGMENT_AND_TRIM = `
const addon = { exports: {} };
process.dlopen(addon, process.argv[1]);
const anon = () => Number(/RssAnon:\\s+(\\d+)/.exec(require('fs').readFileSync('/proc/self/status', 'utf8'))[1]) / 1024;
let buffers = Array.from({ length: 8000 }, () => Buffer.allocUnsafeSlow(4000).fill(1));
const kept = buffers.filter((_, i) => i % 64 === 63);
buffers = undefined;
gc(); gc();
setImmediate(() => {
  gc();
  const before = anon();
  const released = addon.exports.mallocTrim();
  const after = anon();
  process.stdout.write(JSON.stringify({ before, after, released, kept: kept.length }));
});
`;

describe('the malloc_trim addon', { timeout: 60_000 }, () => {
  test('is built beside the bundle and loads', { skip }, () => {
    const load = loadMallocTrim(DIST);
    assert.ok('trim' in load, JSON.stringify(load));
    assert.equal(typeof load.trim(), 'boolean');
    // mallopt(M_TRIM_THRESHOLD, 64 KB), for a daemon started without the unit's environment.
    assert.equal(load.setTrimThreshold(), true);
  });

  for (const [name, node] of [
    ['this Node', () => process.execPath],
    ['Node 18', () => node18()],
  ] as const) {
    test(`gives a fragmented C heap back to the system on ${name}`, { skip }, () => {
      const run = (trim: string) =>
        JSON.parse(
          execFileSync(node(), ['--expose-gc', '--single-threaded-gc', '-e', FRAGMENT_AND_TRIM.replace('addon.exports.mallocTrim()', trim), ADDON], {
            encoding: 'utf8',
          }),
        ) as { before: number; after: number; released: boolean };
      // Without the call glibc keeps the ~31 MB the freed buffers used: the premise of the addon.
      const control = run('false');
      assert.ok(control.before - control.after < 2, `without malloc_trim memory stays: ${JSON.stringify(control)}`);
      const trimmed = run('addon.exports.mallocTrim()');
      assert.equal(trimmed.released, true);
      assert.ok(trimmed.before - trimmed.after > 20, `malloc_trim returns the freed heap (MB): ${JSON.stringify(trimmed)}`);
    });
  }

  test('the daemon with --expose-gc uses it', { skip }, async () => {
    const dir = bundleWith(ADDON);
    const daemon = await spawnDaemon(['--debug'], { cwd: dir, bundle: join(dir, 'iogate.js'), nodeOptions: ['--expose-gc'] });
    try {
      assert.match(daemon.output(), /DEBUG memory: the C heap is trimmed after each burst of requests \(malloc_trim\)/);
      const maps = readFileSync(`/proc/${daemon.child.pid}/maps`, 'utf8');
      assert.ok(maps.includes(mallocTrimPath(dir)), 'the addon is mapped into the daemon');
    } finally {
      assert.equal(await daemon.stop(), 0);
    }
  });

  test('a broken addon file: a warning naming the file, and the daemon serves as usual', async () => {
    const dir = bundleWith(Buffer.from('not an ELF file\n'));
    const daemon = await spawnDaemon([], { cwd: dir, bundle: join(dir, 'iogate.js'), nodeOptions: ['--expose-gc'] });
    try {
      const warning = /WARNING memory: the malloc_trim addon cannot be used, so the C heap a burst of requests frees is kept: (.*)/.exec(daemon.output());
      assert.ok(warning, daemon.output());
      assert.ok(warning[1]!.startsWith(mallocTrimPath(dir)), warning[1]);
      const di = await (await fetch(`${daemon.baseUrl}/rest/di/1_01`)).json();
      assert.equal(di.circuit, '1_01');
    } finally {
      assert.equal(await daemon.stop(), 0);
    }
  });

  test('no addon: nothing to say above DEBUG, and the daemon serves as usual', async () => {
    const dir = bundleWith(undefined);
    const daemon = await spawnDaemon(['--debug'], { cwd: dir, bundle: join(dir, 'iogate.js'), nodeOptions: ['--expose-gc'] });
    try {
      assert.match(daemon.output(), /DEBUG memory: no malloc_trim addon \(.*not built\)/);
      assert.doesNotMatch(daemon.output(), /WARNING memory/);
      const di = await (await fetch(`${daemon.baseUrl}/rest/di/1_01`)).json();
      assert.equal(di.circuit, '1_01');
    } finally {
      assert.equal(await daemon.stop(), 0);
    }
  });
});
