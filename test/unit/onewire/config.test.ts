import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadConfig } from '../../../src/config/load.js';
import { startupSummary } from '../../../src/config/summary.js';
import { ConfigError } from '../../../src/config/errors.js';
import { SimulatedOneWire } from '../../../src/sim/onewire.js';
import { buildRuntime } from '../../../src/runtime/runtime.js';
import { findModel } from '../../../src/boards/resolve.js';
import { createLogger } from '../../../src/logging/log.js';
import { tempDir } from '../../helpers/temp-dir.js';

// The 1-Wire bus in config.yaml: EVOK's keys and defaults, ours (where
// owserver listens, simulated devices), and the built-in configuration's
// simulated sensors.

function load(lines: string[]) {
  const dir = tempDir('iogate-ow-config-');
  const file = join(dir, 'config.yaml');
  writeFileSync(file, ['comm_channels:', ...lines, ''].join('\n'));
  return { file, ...loadConfig({ file }) };
}

test("EVOK's defaults: interval 60 s, scan_interval 300 s, owserver on 127.0.0.1:4304; OWBUS is OWFS", () => {
  const { config, warnings } = load(['  OW: {type: OWFS}', '  OLD: {type: OWBUS}']);
  assert.deepEqual(warnings, []);
  assert.deepEqual(config.oneWireBuses, [
    { name: 'OW', type: 'OWFS', hostname: '127.0.0.1', port: 4304, timeoutMs: 3000, interval: 60, scanInterval: 300 },
    { name: 'OLD', type: 'OWBUS', hostname: '127.0.0.1', port: 4304, timeoutMs: 3000, interval: 60, scanInterval: 300 },
  ]);
  assert.deepEqual(config.buses, []);
});

test('our keys: hostname, port, timeout, simulate; scan_interval 0 or less is hourly, as in EVOK', () => {
  const { config } = load(['  OW: {type: OWFS, hostname: 10.0.0.5, port: 4305, timeout: 500, interval: 5, scan_interval: 0, owpower: 1, simulate: [28, 26, 3A]}']);
  assert.deepEqual(config.oneWireBuses[0], {
    name: 'OW', type: 'OWFS', hostname: '10.0.0.5', port: 4305, timeoutMs: 500, interval: 5, scanInterval: 3600, owpower: '1', simulate: ['28', '26', '3A'],
  });
  assert.match(startupSummary(config), /OW: 1-Wire through simulated owserver \(28, 26, 3A\), sensors read every 5 s, bus searched every 3600 s/);
});

test('devices under a 1-Wire bus are warned about (EVOK crashed on them); bad values stop start-up with file and line', () => {
  const { file, warnings } = load(['  OW:', '    type: OWFS', '    devices:', '      1: {model: DS18B20}']);
  assert.deepEqual(warnings, [`${file}:5: comm_channels.OW.devices: 1-Wire sensors are discovered on the bus; devices listed here are ignored`]);
  assert.throws(
    () => load(['  OW: {type: OWFS, port: 99999, interval: fast, simulate: [77]}']),
    (error: unknown) =>
      error instanceof ConfigError &&
      /:2: comm_channels\.OW\.port: expected an integer 1\.\.65535/.test(error.message) &&
      /comm_channels\.OW\.interval: expected a number/.test(error.message) &&
      /comm_channels\.OW\.simulate: expected a list of 1-Wire family codes/.test(error.message),
  );
});

test('the built-in configuration has simulated thermometers and a DS2438 that are read through the owserver protocol', async () => {
  const { config } = loadConfig({});
  // State (counter totals) goes to a temporary folder, not the working directory.
  config.stateDir = tempDir('iogate-state-');
  assert.deepEqual(config.oneWireBuses.map((bus) => [bus.name, bus.simulate]), [['OWBUS', ['28', '28', '26']]]);
  const runtime = buildRuntime(config, (name) => findModel(name, new Map()), createLogger('CRITICAL'));
  await runtime.start();
  try {
    const sensors = runtime.registry.list('temp').map((device) => device.full());
    assert.deepEqual(sensors.map((sensor) => sensor['dev']), ['temp', 'temp', '1wdevice']);
    for (const sensor of sensors.slice(0, 2)) assert.equal(typeof sensor['value'], 'number');
    assert.equal(typeof sensors[2]!['humidity'], 'number');
    assert.equal(runtime.registry.find('owbus', 'OWBUS')?.full()['interval'], 10);
  } finally {
    await runtime.stop();
  }
});

test('simulated temperatures drift with time and stay plausible', () => {
  let now = 0;
  const devices = new SimulatedOneWire(['28', '28'], () => now);
  const [first] = devices.addresses;
  const readings = new Set<number>();
  for (now = 0; now < 10 * 60_000; now += 30_000) {
    const value = Number(devices.read(`/${first}/temperature`));
    assert.ok(value >= 19 && value <= 24, `plausible room temperature: ${value}`);
    readings.add(value);
  }
  assert.ok(readings.size > 5, 'the value moves');
  now = 0;
  assert.notEqual(devices.read(`/${first}/temperature`), devices.read(`/${devices.addresses[1]}/temperature`), 'sensors differ');
});
