import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { blockCommands, docBlocks, pointedAt, shownKeys } from '../helpers/doc-blocks.js';
import { spawnDaemon, type SpawnedDaemon } from '../helpers/spawn-daemon.js';
import { tempDir } from '../helpers/temp-dir.js';

// The docs' runnable shell blocks, verbatim through sh with the real curl
// (which npm test cannot count on), against the built daemon's simulated
// controller: only the documented address is pointed at the test's daemon.
// A curlrc makes curl fail on an HTTP error, so a block whose request is
// refused fails here as it would fail a user.

function curlMissing(): string | undefined {
  return spawnSync('curl', ['--version']).status === 0 ? undefined : 'curl not installed (apt-get install curl)';
}

const skip = curlMissing();

describe('the docs\' shell blocks, with curl', { skip }, () => {
  let daemon: SpawnedDaemon;
  const curlHome = tempDir('iogate-curlrc-');
  writeFileSync(join(curlHome, '.curlrc'), 'fail-with-body\nshow-error\n');

  before(async () => {
    daemon = await spawnDaemon([]);
  });
  after(() => daemon.stop());

  for (const block of docBlocks().filter((one) => one.notRunnable === undefined)) {
    test(`${block.file}:${block.line}`, () => {
      const script = pointedAt(block.text, daemon.apiUrl);
      const output = execFileSync('sh', ['-e', '-c', script], { encoding: 'utf8', env: { ...process.env, CURL_HOME: curlHome }, timeout: 60_000 });
      for (const command of blockCommands(block.text)) {
        for (const key of shownKeys(command.shown)) assert.ok(output.includes(`"${key}":`), `${block.file}:${block.line}: no "${key}" in ${output.slice(0, 300)}`);
      }
    });
  }
});
