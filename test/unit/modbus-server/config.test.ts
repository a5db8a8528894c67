import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { allowList } from '../../../src/api/modbus-server/allow-list.js';
import { renderMetrics } from '../../../src/api/http/metrics.js';
import { newModbusServerStats } from '../../../src/api/modbus-server/stats.js';
import { readCheckedConfig } from '../../../src/runtime/checked-config.js';
import { ConfigError } from '../../../src/config/errors.js';
import { startupSummary } from '../../../src/config/summary.js';
import { runDaemonToExit } from '../../helpers/spawn-daemon.js';
import { tempDir } from '../../helpers/temp-dir.js';

// apis.modbus_server's settings: defaults, the allow list, and the bind rule
// (no allow list off loopback: refused at start-up and by --check-config, 78).

function configFile(server: string[]): string {
  const file = join(tempDir('iogate-mbs-'), 'config.yaml');
  writeFileSync(file, ['alias_file: alias.yaml', 'apis:', '  modbus_server:', ...server.map((line) => `    ${line}`), ''].join('\n'));
  return file;
}

test('off by default, on loopback port 5020 when switched on', () => {
  const { config } = readCheckedConfig({ file: configFile(['enabled: false']) });
  assert.deepEqual(config.apis.modbusServer, {
    enabled: false,
    address: '127.0.0.1',
    port: 5020,
    maxAgeMs: 100,
    virtualUnit: 250,
    write: true,
    allow: [],
    maxRequestsPerSecond: 2000,
  });
  assert.match(startupSummary(config), /^ {2}Modbus TCP off$/m);
  const on = readCheckedConfig({ file: configFile(['enabled: true', 'write: false']) }).config;
  assert.match(startupSummary(on), /^ {2}Modbus TCP on, 127\.0\.0\.1:5020, iogate's own values at unit 250, cache 100 ms, writes refused, any local client$/m);
});

test('a non-loopback address without an allow list is refused; with one it is accepted', () => {
  assert.throws(
    () => readCheckedConfig({ file: configFile(['enabled: true', 'address: 0.0.0.0']) }),
    (error: unknown) => error instanceof ConfigError && /modbus_server: refusing to listen on 0\.0\.0\.0 without an allow list/.test(error.message),
  );
  const { config } = readCheckedConfig({ file: configFile(['enabled: true', 'address: 0.0.0.0', 'allow: [10.0.0.0/24, "fd00::/8", 192.168.1.5]']) });
  assert.deepEqual(config.apis.modbusServer.allow, ['10.0.0.0/24', 'fd00::/8', '192.168.1.5']);
});

test('max_requests_per_second is read, and must be at least 1', () => {
  assert.equal(readCheckedConfig({ file: configFile(['enabled: true', 'max_requests_per_second: 500']) }).config.apis.modbusServer.maxRequestsPerSecond, 500);
  assert.throws(() => readCheckedConfig({ file: configFile(['enabled: true', 'max_requests_per_second: 0']) }), /max_requests_per_second/);
});

test('an allow entry that is not an address or prefix is an error', () => {
  assert.throws(() => readCheckedConfig({ file: configFile(['enabled: true', 'allow: [10.0.0.0/33]']) }), /prefix length must be 0\.\.32/);
  assert.throws(() => readCheckedConfig({ file: configFile(['enabled: true', 'allow: [scada.local]']) }), /not an IP address or CIDR prefix/);
});

test('the allow list matches IPv4 (also mapped into IPv6) and IPv6 prefixes', () => {
  const list = allowList(['10.0.0.0/24', 'fd00::/8', '192.168.1.5']);
  assert.equal(list.allows('10.0.0.77'), true);
  assert.equal(list.allows('::ffff:10.0.0.77'), true);
  assert.equal(list.allows('10.0.1.1'), false);
  assert.equal(list.allows('192.168.1.5'), true);
  assert.equal(list.allows('192.168.1.6'), false);
  assert.equal(list.allows('fd12::1'), true);
  assert.equal(list.allows('fe80::1'), false);
  assert.equal(list.allows(undefined), false);
});

test('metrics: requests, exceptions by code, cache hits, passthroughs, refused writes', () => {
  const stats = newModbusServerStats();
  stats.requests = 5;
  stats.exceptions.set(4, 2);
  stats.cacheHits = 3;
  stats.passthroughs = 1;
  stats.refusedWrites = 2;
  const text = renderMetrics({ buses: [], slaves: [], modbusServer: () => ({ stats, connections: 1 }) });
  for (const line of [
    'iogate_modbus_server_requests_total 5',
    'iogate_modbus_server_exceptions_total{code="4"} 2',
    'iogate_modbus_server_cache_hits_total 3',
    'iogate_modbus_server_passthroughs_total 1',
    'iogate_modbus_server_refused_writes_total 2',
    'iogate_modbus_server_connections 1',
  ]) {
    assert.ok(text.includes(`\n${line}\n`), `${line} in\n${text}`);
  }
});

test('--check-config and start-up both refuse it with exit 78 and say how to fix it', async () => {
  const file = configFile(['enabled: true', 'address: 0.0.0.0']);
  for (const args of [['--check-config', '--config', file], ['--config', file]]) {
    const { code, stderr } = await runDaemonToExit(args);
    assert.equal(code, 78, stderr);
    assert.match(stderr, /apis\.modbus_server: refusing to listen on 0\.0\.0\.0 without an allow list/);
    assert.match(stderr, /apis\.modbus_server\.allow/);
  }
});
