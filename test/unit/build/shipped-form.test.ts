import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { BUNDLE, spawnDaemon } from '../../helpers/spawn-daemon.js';
import { tempDir } from '../../helpers/temp-dir.js';

// What a user gets who copies the build by hand: dist/ holds only what a
// Linux PLC can use, and iogate.js copied without prebuilds/ still runs, with
// one clear line for each RTU bus instead of a retry loop of loader errors.

const DIST = fileURLToPath(new URL('../../../dist', import.meta.url));
const PLATFORM = `${process.platform}-${process.arch}`;

test('dist/prebuilds holds Linux builds only', () => {
  const platforms = readdirSync(join(DIST, 'prebuilds')).sort();
  assert.deepEqual(platforms, ['linux-arm', 'linux-arm64', 'linux-x64']);
});

test('iogate.js alone: an RTU bus stays down with one line saying what to copy where', async () => {
  const dir = tempDir('iogate-noprebuilds-');
  copyFileSync(BUNDLE, join(dir, 'iogate.js'));
  const config = join(dir, 'config.yaml');
  writeFileSync(
    config,
    `alias_file: alias.yaml
comm_channels:
  RS485:
    type: MODBUSRTU
    port: ${join(dir, 'ttyNS0')}
    devices:
      1:
        model: xS11
        slave-id: 1
  SIM:
    type: SIMULATOR
    devices:
      2:
        model: '00'
        slave-id: 2
`,
  );
  const daemon = await spawnDaemon(['--config', config], { cwd: dir, bundle: join(dir, 'iogate.js') });
  try {
    // Long enough for several reconnects at the bus's back-off (0.1, 0.2, 0.4, 0.8 s ...), had there been any.
    await new Promise((resolve) => setTimeout(resolve, 1600));
    const lines = daemon.output().split('\n').filter((line) => /serial|RS485/i.test(line) && !/^\s/.test(line));
    assert.deepEqual(lines, [
      `ERROR bus RS485: serial driver missing: copy prebuilds/${PLATFORM}/ from the build's dist/ to ${dir}/prebuilds/${PLATFORM}/ (RTU buses stay down until iogate is restarted)`,
    ]);
    const metrics = await (await fetch(`${daemon.baseUrl}/metrics`)).text();
    assert.match(metrics, /iogate_bus_connected\{bus="RS485"\} 0/);
    assert.match(metrics, /iogate_bus_reconnects_total\{bus="RS485"\} 0/);
    // The bus is down, honestly: its devices answer 503, the other bus serves.
    const write = await fetch(`${daemon.baseUrl}/rest/ro/1_01`, { method: 'POST', body: new URLSearchParams({ value: '1' }) });
    assert.equal(write.status, 503);
    assert.equal((await fetch(`${daemon.baseUrl}/rest/di/2_01`)).status, 200);
  } finally {
    assert.equal(await daemon.stop(), 0);
  }
});

test('--version prints what GET /version answers, in EVOK\'s format', async () => {
  const printed = execFileSync(process.execPath, [BUNDLE, '--version'], { encoding: 'utf8' });
  const { version } = JSON.parse(readFileSync(fileURLToPath(new URL('../../../package.json', import.meta.url)), 'utf8')) as { version: string };
  assert.equal(printed, `v3.0.6+iogate.${version}\n`);
  const daemon = await spawnDaemon();
  try {
    const response = await fetch(`${daemon.baseUrl}/version`);
    assert.equal(await response.text(), printed.trimEnd());
  } finally {
    await daemon.stop();
  }
});

test('--read-plan prints the scans\' requests per bus and slave, merged where the map allows, and exits', () => {
  const printed = execFileSync(process.execPath, [BUNDLE, '--read-plan'], { encoding: 'utf8' });
  const { buses } = JSON.parse(printed) as { buses: Array<{ name: string; type: string; slaves: Array<{ unit: number; model: string; periodMs: number; scans: Array<Array<{ fc: number; address: number; quantity: number }>> }> }> };
  // The built-in controller: a simulated brain board scanned at 50 Hz.
  const [brain] = buses.find((bus) => bus.type === 'SIMULATOR')!.slaves;
  assert.deepEqual([brain!.unit, brain!.model, brain!.periodMs, brain!.scans.length], [1, '00', 20, 250]);
  assert.deepEqual(brain!.scans[1], [{ fc: 3, address: 0, quantity: 2 }]);
  // On every 250th scan registers 8-19 and 20 are read together.
  assert.ok(brain!.scans[0]!.some((read) => read.address === 8 && read.quantity === 13), JSON.stringify(brain!.scans[0]));
});

test('the man page documents every option and exit code that --help lists', () => {
  const help = execFileSync(process.execPath, [BUNDLE, '--help'], { encoding: 'utf8' });
  const manPage = readFileSync(fileURLToPath(new URL('../../../deploy/iogate.1', import.meta.url)), 'utf8').replaceAll('\\-', '-');
  const options = [...new Set(help.match(/--[a-z][a-z-]+/g))];
  assert.ok(options.length >= 8, options.join(' '));
  for (const option of options) assert.ok(manPage.includes(option), `${option} missing from deploy/iogate.1`);
  for (const code of help.match(/\b(?:2|75|78)\b/g) ?? []) assert.match(manPage, new RegExp(`^\\.B ${code}$`, 'm'));
});

test('the service unit sets a fixed glibc trim threshold, and the benches start the daemon with it', async () => {
  const unit = readFileSync(fileURLToPath(new URL('../../../deploy/iogate.service', import.meta.url)), 'utf8');
  assert.match(unit, /^Environment=MALLOC_TRIM_THRESHOLD_=65536$/m);
  const benchCommon = new URL('../../../bench/common.mjs', import.meta.url).href;
  const { serviceEnvironment, inheritedEnvironment } = (await import(benchCommon)) as {
    serviceEnvironment(): Record<string, string>;
    inheritedEnvironment(): Record<string, string>;
  };
  assert.deepEqual(serviceEnvironment(), { MALLOC_TRIM_THRESHOLD_: '65536' });
  // Nor what a service does not inherit: NODE_EXTRA_CA_CERTS alone costs node ~0.7 MB at start-up.
  const saved = process.env.NODE_EXTRA_CA_CERTS;
  process.env.NODE_EXTRA_CA_CERTS = '/nonexistent/ca.pem';
  try {
    const inherited = inheritedEnvironment();
    assert.equal(Object.keys(inherited).filter((name) => name.startsWith('NODE_')).length, 0);
    assert.equal(inherited.PATH, process.env.PATH);
  } finally {
    if (saved === undefined) delete process.env.NODE_EXTRA_CA_CERTS;
    else process.env.NODE_EXTRA_CA_CERTS = saved;
  }
});

test('node accepts every option the service unit starts it with', () => {
  // An option this node does not know makes it exit before the daemon starts
  // ("bad option"), and systemd would restart it in a loop. The Debian
  // package test repeats this with Debian 12's own node.
  const unit = readFileSync(fileURLToPath(new URL('../../../deploy/iogate.service', import.meta.url)), 'utf8');
  const execStart = /^ExecStart=(\S+)\s+(.*)$/m.exec(unit)?.[2] ?? '';
  const words = execStart.split(/\s+/);
  const options = words.slice(0, words.findIndex((word) => !word.startsWith('--')));
  assert.ok(options.includes('--expose-gc') && options.length >= 5, execStart);
  const out = execFileSync(process.execPath, [...options, '-e', 'process.stdout.write(String(typeof gc))'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  assert.equal(out, 'function');
});
