import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { mallocTrimPath } from '../../../src/memory/malloc-trim.js';
import { BUNDLE, spawnDaemon } from '../../helpers/spawn-daemon.js';
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

  test("started as `node iogate.js`, gc() (and with the addon glibc's trim threshold) is set at run time", async () => {
    const daemon = await spawnDaemon([]);
    try {
      const line = /INFO memory: started without the service unit's node options; set (.*) at run time/.exec(daemon.output());
      assert.ok(line, daemon.output());
      assert.match(line[1]!, /gc\(\)/);
      if (addonBuilt) assert.match(line[1]!, /64 KB trim threshold/);
    } finally {
      assert.equal(await daemon.stop(), 0);
    }
  });
});
