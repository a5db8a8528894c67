import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { isDeepStrictEqual } from 'node:util';
import { AliasSaver, readAliasFile, validateAlias, writeAliasFileAtomic, type AliasEntry } from '../../../src/registry/alias-store.js';
import { bigAliasTable } from '../../support/alias-tables.js';
import { tempDir } from '../../helpers/temp-dir.js';

/** A fresh directory, removed when the test process exits. */
const aliasDir = (): string => tempDir('iogate-alias-');

const fixtures = resolve('fixtures/aliases');

function table(entries: Record<string, [string, string]>): Map<string, AliasEntry> {
  return new Map(Object.entries(entries).map(([name, [circuit, devtype]]) => [name, { circuit, devtype }]));
}

test('validateAlias allows letters, digits, dash, dot and underscore only', () => {
  for (const name of ['light', 'Light_2', 'heating.valve', 'a-b', '1']) assert.equal(validateAlias(name), undefined);
  for (const name of ['', 'with space', 'slash/name', 'ümlaut', 'semi;colon']) assert.equal(validateAlias(name), `Invalid alias ${name}`);
});

test('a missing file is an empty table without warnings', () => {
  assert.deepEqual(readAliasFile(join(aliasDir(), 'alias.yaml')), { aliases: new Map(), warnings: [] });
});

test('write then read gives the same table, in EVOK format with a quoted version', async () => {
  const path = join(aliasDir(), 'nested', 'alias.yaml');
  const aliases = table({
    light_living_room: ['1_01', 'ro'],
    'on': ['2_03', 'do'],
    slave: ['1', 'modbus_slave'],
    'heating.valve': ['1_1000', 'register'],
  });
  await writeAliasFileAtomic(path, aliases);
  const text = readFileSync(path, 'utf8');
  assert.match(text, /^version: '2\.0'$/m);
  assert.match(text, /^ {4}circuit: '1_01'$/m);
  assert.deepEqual(readAliasFile(path), { aliases, warnings: [] });
  assert.deepEqual(readdirSync(join(path, '..')), ['alias.yaml']);
});

test('version 1.0 list files are converted, numeric types through the EVOK 2 id table', () => {
  const { aliases, warnings } = readAliasFile(join(fixtures, 'v1.yaml'));
  assert.deepEqual(warnings, []);
  assert.deepEqual(aliases, table({
    light_living_room: ['1_01', 'ro'],
    door_contact: ['1_04', 'di'],
    'heating.valve': ['2_03', 'do'],
  }));
});

test('an unquoted version: 2.0 is accepted (EVOK ignores such files)', () => {
  const { aliases, warnings } = readAliasFile(join(fixtures, 'v2-unquoted-version.yaml'));
  assert.deepEqual(warnings, []);
  assert.deepEqual(aliases, table({ light_kitchen: ['2_01', 'ro'], boiler_temp: ['28FF5A7B6016051C', 'sensor'] }));
});

test('numeric and alternate device types in a 2.0 file become canonical names', () => {
  const path = join(aliasDir(), 'alias.yaml');
  writeFileSync(path, "version: '2.0'\naliases:\n  a: {circuit: '1_01', devtype: 17}\n  b: {circuit: 1, devtype: 15}\n  c: {circuit: '1_02', devtype: relay}\n");
  assert.deepEqual(readAliasFile(path), { aliases: table({ a: ['1_01', 'do'], b: ['1', 'modbus_slave'], c: ['1_02', 'ro'] }), warnings: [] });
});

test('a corrupt file gives an empty table, a warning and a preserved copy', () => {
  const dir = aliasDir();
  const path = join(dir, 'alias.yaml');
  const garbage = "aliases:\n  a: {circuit: '1_01'\n  devtype: ro\n";
  writeFileSync(path, garbage);
  const { aliases, warnings } = readAliasFile(path);
  assert.equal(aliases.size, 0);
  assert.match(warnings[0], /alias\.yaml: not a valid alias file/);
  assert.match(warnings[1], /the original was kept as .*alias\.yaml\.corrupt-/);
  const copies = readdirSync(dir).filter((name) => name.startsWith('alias.yaml.corrupt-'));
  assert.equal(copies.length, 1);
  assert.equal(readFileSync(join(dir, copies[0]), 'utf8'), garbage);
});

test('an unknown version is not loaded and the file is preserved', () => {
  const dir = aliasDir();
  const path = join(dir, 'alias.yaml');
  writeFileSync(path, "version: '3.0'\naliases: {a: {circuit: '1_01', devtype: ro}}\n");
  const { aliases, warnings } = readAliasFile(path);
  assert.equal(aliases.size, 0);
  assert.match(warnings[0], /unknown version "3\.0"/);
  assert.equal(readdirSync(dir).filter((name) => name.includes('.corrupt-')).length, 1);
});

test('bad entries are dropped one by one, the rest is loaded and the file preserved', () => {
  const dir = aliasDir();
  const path = join(dir, 'alias.yaml');
  writeFileSync(path, [
    "version: '2.0'",
    'aliases:',
    "  good: {circuit: '1_01', devtype: ro}",
    "  'bad name': {circuit: '1_02', devtype: ro}",
    "  no_circuit: {devtype: ro}",
    "  odd_type: {circuit: '1_03', devtype: 99}",
  ].join('\n'));
  const { aliases, warnings } = readAliasFile(path);
  assert.deepEqual(aliases, table({ good: ['1_01', 'ro'] }));
  assert.deepEqual(warnings.slice(0, 3), [
    `${path}: alias bad name dropped: Invalid alias bad name`,
    `${path}: alias no_circuit dropped: no circuit`,
    `${path}: alias odd_type dropped: unknown device type 99`,
  ]);
  assert.match(warnings[3], /the original was kept as/);
});

test('an empty file loads nothing and says so', () => {
  const path = join(aliasDir(), 'alias.yaml');
  writeFileSync(path, '\n');
  const { aliases, warnings } = readAliasFile(path);
  assert.equal(aliases.size, 0);
  assert.deepEqual(warnings, [`${path}: file is empty, no aliases loaded`]);
});

test('AliasSaver coalesces changes into one write of the newest table', async () => {
  const path = join(aliasDir(), 'alias.yaml');
  const errors: string[] = [];
  const saver = new AliasSaver(path, 30, (message) => errors.push(message));
  let current = new Map<string, AliasEntry>();
  let snapshots = 0;
  const snapshot = () => {
    snapshots++;
    return new Map(current);
  };
  for (let i = 0; i < 10; i++) {
    current = table({ [`alias${i}`]: [`1_0${i}`, 'ro'] });
    saver.markDirty(snapshot);
  }
  assert.equal(existsSync(path), false, 'nothing written while changes keep coming');
  // The debounced write is the event awaited here; the bound only keeps a broken saver from hanging the test.
  for (let waited = 0; !existsSync(path) && waited < 5000; waited += 10) await sleep(10);
  assert.equal(snapshots, 1);
  assert.deepEqual(readAliasFile(path).aliases, table({ alias9: ['1_09', 'ro'] }));
  await saver.flush();
  assert.equal(snapshots, 1, 'flush without changes writes nothing');
  assert.deepEqual(errors, []);
});

test('AliasSaver.flush writes at once and never overlaps writes', async () => {
  const path = join(aliasDir(), 'alias.yaml');
  const errors: string[] = [];
  const saver = new AliasSaver(path, 10_000, (message) => errors.push(message));
  let latest = bigAliasTable('ro', 500);
  const flushes: Promise<void>[] = [];
  for (let i = 0; i < 20; i++) {
    latest = table({ [`step${i}`]: ['1_01', i % 2 === 0 ? 'ro' : 'do'] });
    const state = latest;
    saver.markDirty(() => state);
    flushes.push(saver.flush());
  }
  await Promise.all(flushes);
  // Overlapping writes would share the temporary file and fail or mix tables.
  assert.deepEqual(errors, []);
  assert.deepEqual(readAliasFile(path).aliases, latest);
});

test('AliasSaver logs a failed save and retries it on the next change', async () => {
  const dir = aliasDir();
  const blocker = join(dir, 'state');
  writeFileSync(blocker, 'a file where the directory should be');
  const path = join(blocker, 'alias.yaml');
  const errors: string[] = [];
  const saver = new AliasSaver(path, 5, (message) => errors.push(message));
  saver.markDirty(() => table({ first: ['1_01', 'ro'] }));
  await saver.flush();
  assert.equal(errors.length, 1);
  assert.match(errors[0], /Saving aliases to .*alias\.yaml failed/);

  rmSync(blocker);
  mkdirSync(blocker);
  saver.markDirty(() => table({ second: ['1_02', 'ro'] }));
  await saver.flush();
  assert.equal(errors.length, 1);
  assert.deepEqual(readAliasFile(path).aliases, table({ second: ['1_02', 'ro'] }));
});

test('a save killed at any moment leaves the old or the new complete table', async (t) => {
  const path = join(aliasDir(), 'alias.yaml');
  const before = bigAliasTable('ro');
  const after = bigAliasTable('do');
  await writeAliasFileAtomic(path, before);
  const script = resolve('test/support/alias-save-loop.ts');
  let cutMidWrite = 0;
  for (let run = 0; run < 8; run++) {
    const child = spawn(process.execPath, ['--import', 'tsx', script, path], { stdio: ['ignore', 'pipe', 'inherit'] });
    await once(child.stdout, 'data');
    await sleep(Math.random() * 150);
    child.kill('SIGKILL');
    await once(child, 'exit');
    const { aliases, warnings } = readAliasFile(path);
    assert.deepEqual(warnings, [], `run ${run}`);
    assert.ok(isDeepStrictEqual(aliases, before) || isDeepStrictEqual(aliases, after), `run ${run}: the file holds a complete table`);
    if (existsSync(join(path, '..', '.alias.yaml.tmp'))) cutMidWrite++;
  }
  // Which runs were cut mid-write depends on timing; the report helps judge the test's strength.
  t.diagnostic(`${cutMidWrite} of 8 kills left a partial temporary file`);
});
