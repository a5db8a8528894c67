import assert from 'node:assert/strict';
import { chmodSync, chownSync, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { readAliasFile } from '../../../src/registry/alias-store.js';
import { startDaemon, simulatorYaml } from '../../helpers/daemon.js';
import { FORM, configFile, httpCall } from '../../helpers/http-call.js';
import { spawnDaemon } from '../../helpers/spawn-daemon.js';

// `save=1` tells the truth: a file that could not be written is an error,
// the old file stays as it was, and a saved file keeps the mode and owner the
// user gave it. Large alias files load in linear time.

/** An alias file with `count` aliases of devices that are not configured (they are kept and saved again). */
function aliasFileText(count: number): string {
  let text = 'aliases:\n';
  for (let i = 0; i < count; i++) text += `  'kept${i}':\n    circuit: '9_${String(i).padStart(4, '0')}'\n    devtype: 'ro'\n`;
  return `${text}version: '2.0'\n`;
}

test('save=1 on a full disk (file size limit) answers an error and leaves the old file intact', async () => {
  const { dir, file } = configFile(`alias_file: alias.yaml\n${simulatorYaml({ 1: '00' })}`);
  const aliasFile = join(dir, 'alias.yaml');
  const original = aliasFileText(400); // ~25 KiB, more than the daemon may write
  writeFileSync(aliasFile, original);
  chmodSync(aliasFile, 0o600);
  // RLIMIT_FSIZE of 8 KiB for the daemon only: writes past it fail with EFBIG, as a full disk fails with ENOSPC.
  const wrapper = join(dir, 'limited-node');
  writeFileSync(wrapper, `#!/bin/sh\nulimit -f 8\nexec "${process.execPath}" "$@"\n`, { mode: 0o755 });
  const daemon = await spawnDaemon(['--config', file], { cwd: dir, node: wrapper });
  try {
    const named = await httpCall(daemon.baseUrl, '/rest/do/1_01', { method: 'POST', headers: FORM, body: 'alias=pump' });
    assert.equal(named.status, 200, named.text);
    const save = await httpCall(daemon.baseUrl, '/rest/run/alias', { method: 'POST', headers: FORM, body: 'save=1' });
    assert.equal(save.status, 507, save.text);
    assert.equal(save.json.success, false);
    assert.match(save.json.errors.OSError, /not saved, the previous file is unchanged/);
    assert.equal(readFileSync(aliasFile, 'utf8'), original, 'the old file is untouched');
    assert.equal(statSync(aliasFile).mode & 0o777, 0o600);
    assert.equal(existsSync(join(dir, '.alias.yaml.tmp')), false, 'no half-written temporary file left');
  } finally {
    await daemon.stop();
  }
});

test('a saved alias file keeps its permissions and owner', async () => {
  const { dir } = configFile('');
  const aliasFile = join(dir, 'alias.yaml');
  writeFileSync(aliasFile, aliasFileText(3));
  chmodSync(aliasFile, 0o640);
  // Only root can give a file to someone else; then the owner must survive the save too.
  const owner = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : { uid: statSync(aliasFile).uid, gid: statSync(aliasFile).gid };
  if (process.getuid?.() === 0) chownSync(aliasFile, owner.uid, owner.gid);
  const daemon = await startDaemon(simulatorYaml({ 1: '00' }), dir);
  try {
    await httpCall(daemon.baseUrl, '/rest/ro/1_01', { method: 'POST', headers: FORM, body: 'alias=valve' }).catch(() => undefined);
    const named = await httpCall(daemon.baseUrl, '/rest/do/1_02', { method: 'POST', headers: FORM, body: 'alias=valve2' });
    assert.equal(named.status, 200, named.text);
    const save = await httpCall(daemon.baseUrl, '/rest/run/alias', { method: 'POST', headers: FORM, body: 'save=1' });
    assert.equal(save.status, 200, save.text);
    assert.match(readFileSync(aliasFile, 'utf8'), /valve2/);
    const after = statSync(aliasFile);
    assert.equal(after.mode & 0o7777, 0o640);
    assert.deepEqual({ uid: after.uid, gid: after.gid }, owner);
  } finally {
    await daemon.stop();
  }
});

test('50,000 aliases load, every one of them; a repeated name keeps the later entry', () => {
  const { dir } = configFile('');
  const aliasFile = join(dir, 'alias.yaml');
  writeFileSync(aliasFile, `${aliasFileText(50_000).replace("version: '2.0'\n", '')}  'kept7':\n    circuit: '3_03'\n    devtype: 'di'\nversion: '2.0'\n`);
  const { aliases, warnings } = readAliasFile(aliasFile);
  assert.equal(aliases.size, 50_000);
  assert.deepEqual(aliases.get('kept7'), { circuit: '3_03', devtype: 'di' });
  assert.deepEqual(aliases.get('kept49999'), { circuit: '9_49999', devtype: 'ro' });
  assert.deepEqual(warnings, []);
});
