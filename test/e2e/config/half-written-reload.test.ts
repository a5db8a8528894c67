import assert from 'node:assert/strict';
import { closeSync, openSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { reloadsSettled, replaceFile, staysAlive } from '../../helpers/reload-storm.js';
import { spawnDaemon } from '../../helpers/spawn-daemon.js';
import { tempDir } from '../../helpers/temp-dir.js';

// A configuration rewritten in place, slowly, while SIGHUPs arrive: every
// reload sees a file that is still being written. A prefix of this file is
// valid YAML without its `auth:` section, which would open anonymous writes
// on loopback. No such prefix may be applied: anonymous writes stay refused
// throughout, and once the writer is done the whole file is applied.

const TOKEN = 'admin-token-0000001';
const TEXT = [
  'alias_file: alias.yaml',
  'comm_channels:',
  '  A:',
  '    type: SIMULATOR',
  '    toggle_ms: 0',
  '    devices:',
  '      1: {model: "00", scan_frequency: 20}',
  'apis:',
  '  websocket: {enabled: true}',
  '  auth:',
  '    loopback_anonymous: false',
  '    tokens:',
  `      - {name: admin, token: ${TOKEN}, scope: admin}`,
  '',
].join('\n');

async function post(baseUrl: string, token?: string): Promise<number> {
  const reply = await fetch(`${baseUrl}/rest/do/1_01`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', ...(token ? { Authorization: `Bearer ${token}` } : {}) },
    body: 'value=0',
  });
  await reply.arrayBuffer();
  return reply.status;
}

test('a file rewritten in place while SIGHUPs arrive is never applied half-written: anonymous writes stay refused', { timeout: 120_000 }, async () => {
  const dir = tempDir('iogate-half-written-');
  const file = join(dir, 'config.yaml');
  writeFileSync(file, TEXT);
  const daemon = await spawnDaemon(['--config', file], { cwd: dir, tap: false });
  try {
    assert.equal(await post(daemon.baseUrl), 401);
    let writing = true;
    // The same text again and again, truncated and written 24 bytes every 8 ms (about 0.15 s per file).
    const writer = (async () => {
      const until = performance.now() + 4000;
      while (performance.now() < until) {
        const fd = openSync(file, 'w');
        try {
          for (let at = 0; at < TEXT.length; at += 24) {
            writeSync(fd, TEXT.slice(at, at + 24));
            await new Promise((resolve) => setTimeout(resolve, 8));
          }
        } finally {
          closeSync(fd);
        }
      }
      writing = false;
    })();
    const signals = (async () => {
      while (writing) {
        daemon.child.kill('SIGHUP');
        await new Promise((resolve) => setTimeout(resolve, 15));
      }
    })();
    const statuses = new Map<number, number>();
    while (writing) {
      const status = await post(daemon.baseUrl);
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
    }
    await Promise.all([writer, signals]);
    daemon.child.kill('SIGHUP');
    await reloadsSettled(daemon, 30_000);
    await staysAlive(daemon, 200);
    assert.deepEqual([...statuses.keys()], [401], `anonymous writes while the file was written: ${JSON.stringify([...statuses])}`);
    const applied = daemon.output().split('\n').filter((line) => line.includes('configuration reloaded from'));
    // Only the whole file was applied: the same as at the start, so nothing changed.
    assert.ok(applied.length > 0, 'the file, once written, was applied');
    assert.deepEqual(applied.filter((line) => !/: nothing changed; buses kept polling: modbus:A$/.test(line)), [], 'no reload changed anything');
    assert.equal(await post(daemon.baseUrl), 401);
    assert.equal(await post(daemon.baseUrl, TOKEN), 200);
  } finally {
    assert.equal(await daemon.stop(), 0);
  }
});

test('a whole file that opens writes without a token is applied, with a warning that says so', { timeout: 60_000 }, async () => {
  const dir = tempDir('iogate-half-written-');
  const file = join(dir, 'config.yaml');
  writeFileSync(file, TEXT);
  const daemon = await spawnDaemon(['--config', file], { cwd: dir, tap: false });
  try {
    assert.equal(await post(daemon.baseUrl), 401);
    replaceFile(file, TEXT.replace('loopback_anonymous: false', 'loopback_anonymous: true'));
    daemon.child.kill('SIGHUP');
    await reloadsSettled(daemon, 30_000);
    assert.match(daemon.output(), /WARNING reload: requests without a token may now read and write: loopback clients \(before: nobody\)/);
    assert.equal(await post(daemon.baseUrl), 200);
  } finally {
    assert.equal(await daemon.stop(), 0);
  }
});
