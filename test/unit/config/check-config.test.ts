import assert from 'node:assert/strict';
import { once } from 'node:events';
import { chmodSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import { runDaemonToExit } from '../../helpers/spawn-daemon.js';
import { tempDir } from '../../helpers/temp-dir.js';

// `iogate --check-config`: everything start-up validates, without opening a
// port or a bus; the summary and 0, or one line per problem and 78. The
// package runs it before switching from EVOK, the unit before each start.

function configFile(lines: string[]): string {
  const file = join(tempDir('iogate-check-'), 'config.yaml');
  writeFileSync(file, ['alias_file: alias.yaml', ...lines, ''].join('\n'));
  return file;
}

test('a good file: the start-up summary on stdout, exit 0, and nothing listens or polls', async () => {
  // A port that is taken: the check must not try to bind it.
  const holder = createServer().listen(0, '127.0.0.1');
  await once(holder, 'listening');
  const port = (holder.address() as AddressInfo).port;
  try {
    const file = configFile([
      'apis:',
      `  port: ${port}`,
      'comm_channels:',
      '  RS485:',
      '    type: MODBUSRTU',
      '    port: /dev/iogate-no-such-line',
      '    devices:',
      '      1: {model: xS30, slave-id: 1}',
    ]);
    const { code, stdout, stderr } = await runDaemonToExit(['--check-config', '--config', file]);
    assert.equal(code, 0, stderr);
    assert.match(stdout, new RegExp(`^Configuration: ${file}$`, 'm'));
    assert.match(stdout, /^ {4}device 1 +model xS30 +slave 1 /m);
    assert.match(stdout, new RegExp(`^  HTTP +http://127\\.0\\.0\\.1:${port}$`, 'm'));
    assert.match(stdout, /^Configuration OK$/m);
    assert.doesNotMatch(stderr, /listening|serial|RS485/);
  } finally {
    holder.close();
  }
});

test('problems of every kind at once, as start-up reports them, exit 78', async () => {
  const file = configFile([
    'apis:',
    '  address: 0.0.0.0',
    'comm_channels:',
    '  A:',
    '    type: MODBUSRTU',
    '    port: /dev/ttyNS0',
    '    devices:',
    '      1: {model: xS99}',
    '  B:',
    '    type: MODBUSRTU',
    '    port: /dev/ttyNS0',
    '    devices:',
    '      2: {slave-id: 2}',
  ]);
  const { code, stdout, stderr } = await runDaemonToExit(['--check-config', '--config', file]);
  assert.equal(code, 78);
  assert.equal(stdout, '');
  assert.match(stderr, /^iogate: configuration check failed: Invalid configuration \(4 problems\):$/m);
  assert.match(stderr, new RegExp(`^  ${file}:9: comm_channels\\.A\\.devices\\.1\\.model: no board model 'xS99' \\(did you mean 'xS10' or `, 'm'));
  // A missing model is one line, not a second "no board model ''".
  assert.match(stderr, new RegExp(`^  ${file}:14: comm_channels\\.B\\.devices\\.2: missing required key 'model'`, 'm'));
  assert.doesNotMatch(stderr, /no board model ''/);
  assert.match(stderr, /^  comm_channels\.B\.port: \/dev\/ttyNS0 is also bus A's serial line/m);
  assert.match(stderr, /^  refusing to listen on 0\.0\.0\.0 without access control/m);
});

test('--replacing-evok: a file that does not say where to listen would cut off EVOK clients', async () => {
  const silent = configFile(['apis:', '  port: 8080']);
  const refused = await runDaemonToExit(['--check-config', '--replacing-evok', '--config', silent]);
  assert.equal(refused.code, 78);
  assert.match(refused.stderr, /EVOK answers on every address at port 8080; .* iogate would answer on 127\.0\.0\.1 \(this controller only\): clients on the network would lose access/);
  // Without the option the same file is fine: loopback is the safe default for a new controller.
  assert.equal((await runDaemonToExit(['--check-config', '--config', silent])).code, 0);
  const loopback = configFile(['apis:', '  port: 8080', '  address: 127.0.0.1']);
  assert.equal((await runDaemonToExit(['--check-config', '--replacing-evok', '--config', loopback])).code, 0);
  const network = configFile(['apis:', '  address: 0.0.0.0', '  auth:', '    tokens: [{name: a, token: 0123456789abcdef, scope: write}]']);
  assert.equal((await runDaemonToExit(['--check-config', '--replacing-evok', '--config', network])).code, 0);
});

test('missing and unreadable files are not called an invalid configuration', async () => {
  const dir = tempDir('iogate-check-');
  const missing = join(dir, 'config.yaml');
  const absent = await runDaemonToExit(['--check-config', '--config', missing]);
  assert.equal(absent.code, 78);
  assert.equal(absent.stderr, `iogate: configuration check failed: Cannot read the configuration:\n  ${missing}: no such file\n`);
  const started = await runDaemonToExit(['--port', '0', '--config', missing]);
  assert.equal(started.stderr, `iogate: cannot start: Cannot read the configuration:\n  ${missing}: no such file\n`);
  const directory = await runDaemonToExit(['--check-config', '--config', dir]);
  assert.match(directory.stderr, /is a directory, not a file/);
  if (process.getuid?.() !== 0) {
    const locked = configFile(['apis: {port: 8080}']);
    chmodSync(locked, 0o000);
    const unreadable = await runDaemonToExit(['--check-config', '--config', locked]);
    assert.match(unreadable.stderr, new RegExp(`^  ${locked}: permission denied for user \\S+ \\(check the file's owner and mode\\)$`, 'm'));
    assert.doesNotMatch(unreadable.stderr, /Invalid configuration/);
  }
});

test('product names resolve to their boards at consecutive slave ids', async () => {
  const file = configFile([
    'comm_channels:',
    '  SIM:',
    '    type: SIMULATOR',
    '    devices:',
    '      1: {model: L203}',
    '      io: {model: S207, slave-id: 7}',
    '      x: {model: E-4AI4AO6DI5RO, slave-id: 9}',
  ]);
  const { code, stdout, stderr } = await runDaemonToExit(['--check-config', '--config', file]);
  assert.equal(code, 0, stderr);
  const devices = stdout.split('\n').filter((line) => line.startsWith('    device ')).map((line) => line.trim().split(/\s+/).slice(1, 6).join(' '));
  assert.deepEqual(devices, ['1 model 00 slave 1', '2 model 08 slave 2', '3 model 08 slave 3', 'io model 01 slave 7', 'x model 0F slave 9']);
  assert.match(stdout, /^ {4}device 2 +model 08 +slave 2 +50 Hz \(L203, board 2 of 3\)$/m);
});

test('a product whose later boards would take another device\'s slave id or name is refused', async () => {
  const file = configFile([
    'comm_channels:',
    '  SIM:',
    '    type: SIMULATOR',
    '    devices:',
    '      1: {model: M503}',
    '      5: {model: "00", slave-id: 2}',
    '  OTHER:',
    '    type: SIMULATOR',
    '    devices:',
    '      7: {model: L533, slave-id: 1}',
    '      9: {model: "01", slave-id: 5}',
  ]);
  const { code, stderr } = await runDaemonToExit(['--check-config', '--config', file]);
  assert.equal(code, 78);
  assert.match(stderr, /devices\.1\.model: M503 is boards 00, 0F at slave ids 1\.\.2; slave-id 2 is also another device's on this bus/);
  assert.match(stderr, /devices\.7\.model: L533 is boards 00, 13, 13 at slave ids 1\.\.3; its board 3 would be device '9', which is also a device on bus OTHER/);
});
