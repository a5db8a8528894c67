import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { BUNDLE, spawnDaemon, type SpawnedDaemon } from '../../helpers/spawn-daemon.js';
import { tempDir } from '../../helpers/temp-dir.js';

// `iogate --reload` (the unit's ExecReload): systemctl reload used to be a bare
// `kill -HUP`, which succeeded whatever the daemon then did with the file. The
// command checks the file, signals the daemon, and exits with its verdict.

function configText(timeout: number, withInterlock = false): string {
  return [
    'alias_file: alias.yaml',
    ...(withInterlock ? ['interlocks:', '  - {outputs: [do/1_01, do/1_02]}'] : []),
    'comm_channels:',
    '  A:',
    '    type: SIMULATOR',
    '    toggle_ms: 0',
    `    timeout: ${timeout}`,
    '    devices:',
    '      1: {model: "00", slave-id: 1, scan_frequency: 20}',
    '',
  ].join('\n');
}

function reloadCommand(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BUNDLE, '--reload', ...args], { timeout: 90_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr }),
    );
  });
}

async function daemonWith(text: string): Promise<{ daemon: SpawnedDaemon; file: string }> {
  const dir = tempDir('iogate-reload-cmd-');
  const file = join(dir, 'config.yaml');
  writeFileSync(file, text);
  return { daemon: await spawnDaemon(['--config', file], { cwd: dir }), file };
}

describe('iogate --reload', { timeout: 120_000 }, () => {
  test('an applied reload: exit 0, what changed on stdout, and the daemon logs it at WARNING', async () => {
    const { daemon, file } = await daemonWith(configText(200));
    try {
      writeFileSync(file, configText(300));
      const result = await reloadCommand(['--pid', String(daemon.child.pid), '--config', file]);
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stdout, /^iogate: configuration reloaded from .*config\.yaml: modbus:A restarted/m);
      // Shown under EVOK's usual logging level.
      assert.match(daemon.output(), /WARNING configuration reloaded from/);
      // A second, unchanged one answers for itself, not with the verdict before.
      const again = await reloadCommand(['--pid', String(daemon.child.pid), '--config', file]);
      assert.equal(again.code, 0, again.stderr);
      assert.match(again.stdout, /nothing changed/);
    } finally {
      await daemon.stop();
    }
  });

  test('a file the daemon refuses: exit 78 with its reason, and it keeps serving', async () => {
    const { daemon, file } = await daemonWith(configText(200, true));
    try {
      // Valid on its own, but with interlocks a bus change takes a restart.
      writeFileSync(file, configText(300, true));
      const result = await reloadCommand(['--pid', String(daemon.child.pid), '--config', file]);
      assert.equal(result.code, 78, `${result.stdout}${result.stderr}`);
      assert.match(result.stdout, /reload refused, still serving the previous configuration: .*restart/);
      assert.equal((await fetch(`${daemon.baseUrl}/rest/do/1_01`)).status, 200);
    } finally {
      await daemon.stop();
    }
  });

  test('an invalid file: exit 78 with the problem, and the daemon is not signalled', async () => {
    const { daemon, file } = await daemonWith(configText(200));
    try {
      writeFileSync(file, 'comm_channels: [not a mapping\n');
      const result = await reloadCommand(['--pid', String(daemon.child.pid), '--config', file]);
      assert.equal(result.code, 78);
      assert.match(result.stderr, /reload not sent, the daemon keeps its configuration/);
      assert.doesNotMatch(daemon.output(), /SIGHUP/);
    } finally {
      await daemon.stop();
    }
  });

  test('no process id, or one that is not there: a clear error', async () => {
    const dir = tempDir('iogate-reload-cmd-');
    const file = join(dir, 'config.yaml');
    writeFileSync(file, configText(200));
    const none = await reloadCommand(['--config', file]);
    assert.equal(none.code, 2);
    assert.match(none.stderr, /--pid/);
    const gone = await reloadCommand(['--pid', '999999999', '--config', file]);
    assert.equal(gone.code, 78);
    assert.match(gone.stderr, /cannot signal process 999999999: (ESRCH|EINVAL)/);
  });
});
