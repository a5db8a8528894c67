import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { holdersOf, lockedPortError } from '../../../src/transport/serial-lock.js';
import { tempDir } from '../../helpers/temp-dir.js';
import { endWithThisProcess } from '../../helpers/orphan-guard.mjs';

// serialport's "Cannot lock port" said in plain words: which program holds
// the line, found in /proc, or the command that finds it.

test('the program holding the line is named; other errors pass unchanged', async () => {
  const line = join(tempDir('iogate-lock-'), 'ttyNS0');
  writeFileSync(line, '');
  // Another process with the "line" open, as EVOK would have it.
  const holder = endWithThisProcess(spawn(process.execPath, ['-e', `require('fs').openSync(${JSON.stringify(line)}, 'r'); console.log('open'); setInterval(() => {}, 1000)`], { stdio: ['ignore', 'pipe', 'ignore'] }));
  try {
    await once(holder.stdout!, 'data');
    assert.deepEqual(holdersOf(line), [`node (pid ${holder.pid})`]);
    const error = lockedPortError(line, new Error('Error Resource temporarily unavailable Cannot lock port'));
    assert.equal(error.message, `serial port ${line} is in use by another program, held by node (pid ${holder.pid}); two masters on one line corrupt each other's frames, so it is left alone until that program lets go`);
  } finally {
    holder.kill();
    await once(holder, 'exit');
  }
  assert.match(lockedPortError(line, new Error('Cannot lock port')).message, new RegExp(`in use by another program \\(find the program with: fuser -v ${line}\\)`));
  const other = new Error('No such file or directory, cannot open /dev/ttyNS9');
  assert.equal(lockedPortError('/dev/ttyNS9', other), other);
});
