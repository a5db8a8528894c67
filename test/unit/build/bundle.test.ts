import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { node18 } from '../../helpers/node18.js';
import { BUNDLE, spawnDaemon } from '../../helpers/spawn-daemon.js';
import { tempDir } from '../../helpers/temp-dir.js';

// dist/iogate.js copied alone into an empty folder must start and serve the
// built-in simulated controller, on Node 18 (the PLC's Debian 12) and Node 20.

function loneCopy(): string {
  const dir = tempDir('iogate-lone-');
  copyFileSync(BUNDLE, join(dir, 'iogate.js'));
  return dir;
}

for (const [name, node] of [
  ['Node 18', () => node18()],
  ['this Node', () => process.execPath],
] as const) {
  test(`the bundle alone serves the simulated controller on ${name}`, async () => {
    const binary = node();
    assert.match(execFileSync(binary, ['--version'], { encoding: 'utf8' }), name === 'Node 18' ? /^v18\./ : /^v\d+\./);
    const dir = loneCopy();
    const daemon = await spawnDaemon([], { node: binary, cwd: dir, bundle: join(dir, 'iogate.js') });
    try {
      const di = await (await fetch(`${daemon.baseUrl}/rest/di/1_01`)).json();
      assert.equal(di.circuit, '1_01');
      const write = await fetch(`${daemon.baseUrl}/rest/do/1_02`, { method: 'POST', body: new URLSearchParams({ value: '1' }) });
      assert.equal((await write.json()).result.value, 1);
    } finally {
      assert.equal(await daemon.stop(), 0);
    }
  });
}
