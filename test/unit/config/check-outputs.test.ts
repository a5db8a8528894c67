import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { BUNDLE, runDaemonToExit, spawnDaemon } from '../../helpers/spawn-daemon.js';
import { tempDir } from '../../helpers/temp-dir.js';
import { endWithThisProcess } from '../../helpers/orphan-guard.mjs';

// `--check-config` resolves every output that covers and interlocks name, as
// start-up does: what start-up refuses with exit 78 (which the unit does not
// retry) the check refuses too, and what the check passes starts.

// Device 1: a Neuron (do, led 1_01..1_04); device 2: a board with ro 2_01..2_08.
const BOARDS = ['comm_channels:', '  SIM:', '    type: SIMULATOR', '    devices:', '      1: {model: "00"}', '      2: {model: "01", slave-id: 2}'];

function configFile(lines: string[], aliases?: string): string {
  const dir = tempDir('iogate-check-outputs-');
  const file = join(dir, 'config.yaml');
  writeFileSync(file, ['alias_file: alias.yaml', ...BOARDS, ...lines, ''].join('\n'));
  if (aliases !== undefined) writeFileSync(join(dir, 'alias.yaml'), aliases);
  return file;
}

/** --check-config on `file`: its exit code and what it printed. */
function check(file: string) {
  return runDaemonToExit(['--check-config', '--config', file]);
}

function cover(name: string, up: string, down: string): string[] {
  return [`  ${name}:`, `    up: ${up}`, `    down: ${down}`, '    travel_up_s: 10', '    travel_down_s: 10'];
}

test('a cover whose relay does not exist is refused by the check, naming the key', async () => {
  const { code, stdout, stderr } = await check(configFile(['covers:', ...cover('blind', 'ro/2_09', 'ro/2_08')]));
  assert.equal(code, 78, stdout);
  assert.match(stderr, /^ {2}covers\.blind\.up: 'ro\/2_09': no ro 2_09 on the configured boards, nor an alias of that name$/m);
});

test('a relay that two covers share is refused by the check', async () => {
  const { code, stdout, stderr } = await check(configFile(['covers:', ...cover('east', 'ro/2_01', 'ro/2_02'), ...cover('west', 'relay/2_03', 'ro/2_01')]));
  assert.equal(code, 78, stdout);
  assert.match(stderr, /^ {2}covers\.west: ro 2_01 already drives cover east$/m);
});

test('an interlock naming a missing output, a wrong type or an unknown alias is refused by the check', async () => {
  const file = configFile(['interlocks:', '  - outputs: [do/1_01, do/1_05]', '  - outputs: [ro/2_01, di/2_01]', '  - outputs: [ro/2_02, nosuch, led/1_01]']);
  const { code, stdout, stderr } = await check(file);
  assert.equal(code, 78, stdout);
  assert.match(stderr, /^ {2}interlocks\[0\]: 'do\/1_05': no do 1_05 on the configured boards/m);
  assert.match(stderr, /^ {2}interlocks\[1\]: 'di\/2_01' is a di; only do, ro and led outputs can be interlocked or drive a cover$/m);
  assert.match(stderr, /^ {2}interlocks\[2\]: 'nosuch' is neither type\/circuit \(e\.g\. ro\/1_01\) nor a known alias$/m);
});

test('outputs named by their alias in the alias file resolve; an alias of an input does not drive a cover', async () => {
  const aliases = 'version: "2.0"\naliases:\n  pump: {circuit: "2_05", devtype: ro}\n  button: {circuit: "2_01", devtype: di}\n';
  const good = await check(configFile(['covers:', ...cover('gate', 'pump', 'relay/2_06'), 'interlocks:', '  - outputs: [al_pump, ro/2_07]'], aliases));
  assert.equal(good.code, 0, good.stderr);
  const bad = await check(configFile(['covers:', ...cover('gate', 'button', 'ro/2_06')], aliases));
  assert.equal(bad.code, 78);
  assert.match(bad.stderr, /^ {2}covers\.gate\.up: 'button' is a di; only do, ro and led/m);
});

test('a cover whose up and down are one relay under two names is refused', async () => {
  const aliases = 'version: "2.0"\naliases:\n  pump: {circuit: "2_05", devtype: relay}\n';
  const { code, stderr } = await check(configFile(['covers:', ...cover('gate', 'pump', 'ro/2_05')], aliases));
  assert.equal(code, 78);
  assert.match(stderr, /^ {2}covers\.gate: up and down are both ro 2_05 \(written 'pump' and 'ro\/2_05'\)$/m);
});

test('a relay in a cover and in an interlock too passes the check, and the daemon starts with it', async () => {
  const file = configFile(['covers:', ...cover('blind', 'ro/2_01', 'ro/2_02'), 'interlocks:', '  - outputs: [ro/2_02, ro/2_03]']);
  const checked = await check(file);
  assert.equal(checked.code, 0, checked.stderr);
  const daemon = await spawnDaemon(['--config', file], { tap: false });
  assert.equal(await daemon.stop(), 0, daemon.output());
});

test('start-up refuses what the check refuses, with the same line, exit 78', async () => {
  const file = configFile(['covers:', ...cover('blind', 'ro/2_09', 'ro/2_08')]);
  const child = endWithThisProcess(spawn(process.execPath, [BUNDLE, '--port', '0', '--config', file], { cwd: tempDir('iogate-cwd-'), stdio: ['ignore', 'ignore', 'pipe'] }));
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const [code] = (await once(child, 'exit')) as [number | null];
  assert.equal(code, 78);
  assert.match(stderr, /^iogate: cannot start: /m);
  assert.match(stderr, /^ {2}covers\.blind\.up: 'ro\/2_09': no ro 2_09 on the configured boards/m);
});

test('the check reads an unusable alias file without writing beside it', async () => {
  const file = configFile(['covers:', ...cover('gate', 'pump', 'ro/2_06')], 'version: "2.0"\naliases:\n  pump: {circuit: "2_05"}\n');
  const { code, stderr } = await check(file);
  assert.equal(code, 78);
  assert.match(stderr, /covers\.gate\.up: 'pump' is neither type\/circuit/);
  assert.deepEqual(readdirSync(dirname(file)).sort(), ['alias.yaml', 'config.yaml']);
});
