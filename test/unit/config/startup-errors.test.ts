import assert from 'node:assert/strict';
import { createServer, type AddressInfo } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { runDaemonToExit } from '../../helpers/spawn-daemon.js';
import { tempDir } from '../../helpers/temp-dir.js';

// A configuration iogate cannot run stops it at once, exit code 78
// (EX_CONFIG, which the systemd unit does not restart on), with one line per
// problem naming file, line and key path (EVOK printed tracebacks, or ran
// without the board).

/** A start with a free port that must fail: its exit code and what it printed. */
function startFails(args: string[]) {
  return runDaemonToExit(['--port', '0', ...args]);
}

test('a device whose model no board map has stops start-up, naming where it was written', async () => {
  const dir = tempDir('iogate-badmodel-');
  const file = join(dir, 'config.yaml');
  writeFileSync(file, 'comm_channels:\n  SIM:\n    type: SIMULATOR\n    devices:\n      1:\n        model: "00"\n      2:\n        model: xS99\n        slave-id: 2\n');
  const { code, stderr } = await startFails(['--config', file]);
  assert.equal(code, 78);
  assert.match(stderr, /config\.yaml:8: comm_channels\.SIM\.devices\.2\.model: no board model 'xS99'/);
  assert.doesNotMatch(stderr, /devices\.1\.model/);
});

test('an invalid value stops start-up with file, line and key path', async () => {
  const file = fileURLToPath(new URL('../../../fixtures/config/broken/slave-id-type.yaml', import.meta.url));
  const { code, stderr } = await startFails(['--config', file]);
  assert.equal(code, 78);
  assert.match(stderr, /slave-id-type\.yaml:\d+: comm_channels\.[^ ]+\.slave-id: expected an integer/);
  assert.doesNotMatch(stderr, /at .*\.js:\d+/, 'no stack trace');
});

test('every problem in one run, board models included: unknown bus type, a device name on two buses, a shared slave id', async () => {
  const dir = tempDir('iogate-misroute-');
  const file = join(dir, 'config.yaml');
  writeFileSync(
    file,
    [
      'comm_channels:',
      '  A:',
      '    type: SIMULATOR',
      '    devices:',
      '      1:',
      '        model: "00"',
      '      2:',
      '        model: xS99',
      '        slave-id: 1',
      '  B:',
      '    type: SIMULATOR',
      '    devices:',
      '      1:',
      '        model: "01"',
      '  C:',
      '    type: MODBUS',
      '  W:',
      '    type: OWFS',
      '',
    ].join('\n'),
  );
  const { code, stderr } = await startFails(['--config', file]);
  assert.equal(code, 78);
  const lines = stderr.split('\n').filter((line) => line.startsWith(`  ${file}:`));
  assert.deepEqual(
    lines.map((line) => line.slice(2 + file.length).replace(/ \(.*/, '')),
    [
      ":8: comm_channels.A.devices.2.model: no board model 'xS99'",
      ":9: comm_channels.A.devices.2.slave-id: slave-id 1 is also device 1's on this bus",
      ":13: comm_channels.B.devices.1: device name '1' is also used on bus A",
      ":16: comm_channels.C.type: unknown bus type 'MODBUS'",
    ],
    stderr,
  );
  assert.doesNotMatch(stderr, /comm_channels\.W/, '1-Wire buses are known types');
});

test('a port already in use exits 75 (try again later), naming the port', async () => {
  const holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  const { port } = holder.address() as AddressInfo;
  try {
    const { code, stderr } = await runDaemonToExit(['--port', String(port)]);
    assert.equal(code, 75, stderr);
    assert.match(stderr, new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port}: the port is in use`));
  } finally {
    holder.close();
  }
});

test('a bad command line exits 2, a missing config file 78', async () => {
  assert.equal((await startFails(['--no-such-flag'])).code, 2);
  const dir = tempDir('iogate-nofile-');
  const { code, stderr } = await startFails(['--config', join(dir, 'missing.yaml')]);
  assert.equal(code, 78, stderr);
  assert.match(stderr, /missing\.yaml/);
});
