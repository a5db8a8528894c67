import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { openLogFile } from '../../../src/logging/log-file.js';
import { BUNDLE, spawnDaemon } from '../../helpers/spawn-daemon.js';
import { tempDir } from '../../helpers/temp-dir.js';
import { endWithThisProcess } from '../../helpers/orphan-guard.mjs';

// The start-up summary tells the log level in force, and `logging.file` is
// really written (bounded), or said not to be.

function configWithLogging(logging: string): { dir: string; file: string } {
  const dir = tempDir('iogate-logging-');
  const file = join(dir, 'config.yaml');
  writeFileSync(file, `alias_file: alias.yaml\nlogging:\n${logging}\ncomm_channels:\n  SIM:\n    type: SIMULATOR\n    devices:\n      1:\n        model: '00'\n`);
  return { dir, file };
}

test('--debug: the summary says DEBUG, and the log file gets the summary and the log lines', async () => {
  const { dir, file } = configWithLogging('  level: WARNING\n  file: iogate.log');
  const logFile = join(dir, 'iogate.log');
  writeFileSync(file, readFileSync(file, 'utf8').replace('file: iogate.log', `file: ${logFile}`));
  const daemon = await spawnDaemon(['--config', file, '--debug'], { cwd: dir });
  try {
    assert.match(daemon.output(), new RegExp(`^Logging: DEBUG to ${logFile}$`, 'm'));
  } finally {
    assert.equal(await daemon.stop(), 0);
  }
  const written = readFileSync(logFile, 'utf8');
  // Every line of the file carries the time (stderr goes to the journal, which adds its own).
  const stamp = '\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z ';
  assert.match(written, new RegExp(`^${stamp}INFO iogate v\\S+ \\(node v[\\d.]+\\) starting with ${file}$`, 'm'));
  assert.match(written, new RegExp(`^${stamp}Configuration: `, 'm'));
  assert.match(written, new RegExp(`^${stamp}INFO listening on http://127\\.0\\.0\\.1:\\d+$`, 'm'));
  assert.match(written, new RegExp(`^${stamp}INFO SIGTERM: shutting down$`, 'm'));
  for (const line of written.trimEnd().split('\n')) assert.match(line, new RegExp(`^${stamp}`));
});

test('without --debug the configured level is shown and applies', async () => {
  const { dir, file } = configWithLogging('  level: WARNING');
  const child = endWithThisProcess(spawn(process.execPath, [BUNDLE, '--port', '0', '--config', file], { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] }));
  let stderr = '';
  child.stderr!.setEncoding('utf8');
  // The summary is the last thing written at start-up; at WARNING the INFO "listening on" line is not.
  for await (const chunk of child.stderr!) {
    stderr += chunk;
    if (/^Logging: .*\n/m.test(stderr)) break;
  }
  child.kill('SIGTERM');
  await once(child, 'exit');
  assert.match(stderr, /^Logging: WARNING$/m);
  assert.doesNotMatch(stderr, /^INFO /m);
});

test('a log file that cannot be opened: one warning, the daemon runs, the summary does not claim it', async () => {
  const { dir, file } = configWithLogging('  level: INFO\n  file: /nonexistent-dir/evok.log');
  const daemon = await spawnDaemon(['--config', file], { cwd: dir });
  try {
    assert.match(daemon.output(), /^WARNING logging\.file \/nonexistent-dir\/evok\.log: cannot write it \(ENOENT\); logging to stderr only$/m);
    assert.match(daemon.output(), /^Logging: INFO$/m);
  } finally {
    assert.equal(await daemon.stop(), 0);
  }
});

test('the log file is bounded: past its size it moves to .1 and starts again', () => {
  const dir = tempDir('iogate-logfile-');
  const path = join(dir, 'iogate.log');
  const log = openLogFile(path, 100);
  for (let i = 0; i < 20; i++) log.write(`line ${String(i).padStart(2, '0')} ${'x'.repeat(20)}\n`);
  log.close();
  assert.ok(statSync(path).size <= 100);
  assert.ok(statSync(`${path}.1`).size <= 100);
  assert.equal(existsSync(`${path}.2`), false);
  assert.match(readFileSync(path, 'utf8'), /line 19 x+\n$/);
  assert.match(readFileSync(`${path}.1`, 'utf8'), /^line \d\d x+\n/);
});
