import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { lateV8Flags, startOptions } from '../../../src/memory/copy-and-run.js';
import { mallocTrimPath } from '../../../src/memory/malloc-trim.js';
import { BUNDLE, spawnDaemon, untilShowingLog } from '../../helpers/spawn-daemon.js';
import { tempDir } from '../../helpers/temp-dir.js';
import { endWithThisProcess } from '../../helpers/orphan-guard.mjs';

// Copy and run: the bundle started without deploy/iogate.service gets the
// unit's memory settings by itself, through its #! line when run as a program,
// and what can be set late when started as `node iogate.js`.

const UNIT = readFileSync(fileURLToPath(new URL('../../../deploy/iogate.service', import.meta.url)), 'utf8');
const unitOptions = new Set(/^ExecStart=\/usr\/bin\/node (.*?) \/usr\/lib\/iogate\/iogate\.js/m.exec(UNIT)![1]!.split(' '));
const unitEnvironment = [...UNIT.matchAll(/^Environment=(.*)$/gm)].map((match) => match[1]!);
const firstLine = () => readFileSync(BUNDLE, 'utf8').split('\n', 1)[0]!;
const addonBuilt = existsSync(mallocTrimPath(dirname(BUNDLE)));

describe('copy and run', { timeout: 60_000 }, () => {
  test("the bundle's #! line carries only the unit's settings, and fits old kernels' 127 bytes", () => {
    const line = firstLine();
    assert.ok(Buffer.byteLength(line) <= 127, `${Buffer.byteLength(line)} bytes: ${line}`);
    const words = /^#!\/usr\/bin\/env -S (.*)$/.exec(line)?.[1]?.split(' ');
    assert.ok(words, line);
    const node = words.indexOf('node');
    assert.ok(node >= 0, line);
    for (const variable of words.slice(0, node)) assert.ok(unitEnvironment.includes(variable), `${variable} is not the unit's`);
    for (const option of words.slice(node + 1)) assert.ok(unitOptions.has(option), `${option} is not among the unit's node options`);
    assert.ok(words.includes('--expose-gc') && words.includes('--max-semi-space-size=1'), line);
  });

  test('run as a program, the daemon runs under node with those settings', async () => {
    const child = endWithThisProcess(spawn(BUNDLE, ['--port', '0'], { cwd: tempDir('iogate-copy-run-'), stdio: ['ignore', 'ignore', 'pipe'] }));
    try {
      let output = '';
      child.stderr!.setEncoding('utf8');
      await new Promise<void>((resolve, reject) => {
        child.stderr!.on('data', (chunk: string) => {
          output += chunk;
          if (output.includes('listening on')) resolve();
        });
        child.once('exit', (code) => reject(new Error(`exited ${code}: ${output}`)));
      });
      const argv = readFileSync(`/proc/${child.pid}/cmdline`, 'utf8').split('\0');
      const environment = readFileSync(`/proc/${child.pid}/environ`, 'utf8').split('\0');
      const words = firstLine().split(' ');
      for (const option of words.filter((word) => word.startsWith('--'))) assert.ok(argv.includes(option), `${option} not in ${argv.join(' ')}`);
      assert.ok(environment.includes('MALLOC_TRIM_THRESHOLD_=65536'));
      // With the options there, nothing is set late.
      assert.doesNotMatch(output, /started without the service unit's node options/);
    } finally {
      child.kill('SIGTERM');
    }
  });

  test("started as `node iogate.js`, V8's late flags, gc() (and with the addon glibc's trim threshold) are set at run time", async () => {
    const daemon = await spawnDaemon([]);
    try {
      const line = /INFO memory: started without the service unit's node options; set (.*) at run time/.exec(daemon.output());
      assert.ok(line, daemon.output());
      assert.match(line[1]!, /--semi-space-growth-factor=1, --optimize-for-size, gc\(\)/);
      if (addonBuilt) assert.match(line[1]!, /64 KB trim threshold/);
    } finally {
      assert.equal(await daemon.stop(), 0);
    }
  });

  test("the late V8 flags are set only where node was not given them: not under the unit, not run as a program, not over the user's own", () => {
    const unitWords = [...unitOptions];
    const shebangWords = firstLine().split(' ').filter((word) => word.startsWith('--'));
    assert.deepEqual(lateV8Flags(startOptions([], undefined)), ['--semi-space-growth-factor=1', '--optimize-for-size']);
    assert.deepEqual(lateV8Flags(startOptions(unitWords, undefined)), []);
    assert.deepEqual(lateV8Flags(startOptions(shebangWords, undefined)), []);
    // The user's own choices win, in either spelling and from NODE_OPTIONS too.
    assert.deepEqual(lateV8Flags(startOptions(['--max_semi_space_size=16'], undefined)), ['--optimize-for-size']);
    assert.deepEqual(lateV8Flags(startOptions([], '--require x.cjs  --no-optimize-for-size')), ['--semi-space-growth-factor=1']);
    assert.deepEqual(lateV8Flags(startOptions(['--inspect'], '--semi-space-growth-factor=2')), ['--optimize-for-size']);
  });

  // The young generation's size is most of what `node iogate.js` idled above the
  // unit (RssAnon 22 against 15 MB with the bench config). Start-up alone doubles
  // the semi-spaces when nothing holds them; a probe loaded before the bundle
  // reports the largest new space it saw after each collection.
  test("started as `node iogate.js`, V8 keeps the young generation at the unit's 1 MB semi-spaces through start-up", async () => {
    const probe = join(tempDir('iogate-young-gen-'), 'probe.cjs');
    writeFileSync(
      probe,
      `const v8 = require('node:v8');
let max = 0;
const read = () => { max = Math.max(max, v8.getHeapSpaceStatistics().find((space) => space.space_name === 'new_space').space_size); };
new (require('node:perf_hooks').PerformanceObserver)(read).observe({ entryTypes: ['gc'] });
setInterval(() => { read(); process.stderr.write('probe: new space at most ' + max + '\\n'); }, 200).unref();
`,
    );
    const largestNewSpace = async (nodeOptions: string[]) => {
      const daemon = await spawnDaemon([], { nodeOptions: ['--require', probe, ...nodeOptions], tap: false });
      try {
        const since = daemon.output().length;
        const seen = () => /probe: new space at most (\d+)/.exec(daemon.output().slice(since));
        await untilShowingLog(daemon, async () => seen() !== null, 'a probe line after start-up');
        return Number(seen()![1]);
      } finally {
        assert.equal(await daemon.stop(), 0);
      }
    };
    // Two semi-spaces of at most 1 MB each (512 KB on 32-bit ARM).
    const bounded = await largestNewSpace([]);
    assert.ok(bounded <= 2 * 1024 * 1024, `new space grew to ${bounded} bytes`);
    // The same start-up with V8's own growth (an option of the user's turns the late flag off) grows it: the check can fail.
    const grown = await largestNewSpace(['--semi-space-growth-factor=2']);
    assert.ok(grown > 2 * 1024 * 1024, `new space stayed at ${grown} bytes`);
  });
});
