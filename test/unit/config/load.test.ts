import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { loadConfig } from '../../../src/config/load.js';
import type { BusConfig, RtuBusConfig, TcpBusConfig } from '../../../src/config/types.js';
import { tempDir } from '../../helpers/temp-dir.js';

/** A fresh directory, removed when the test process exits. */
const configDir = (): string => tempDir('iogate-config-');

const fixtures = resolve('fixtures/config');

function writeConfig(dir: string, text: string, name = 'config.yaml'): string {
  const file = join(dir, name);
  writeFileSync(file, text);
  return file;
}

function bus<T extends BusConfig['type']>(buses: BusConfig[], name: string, type: T): Extract<BusConfig, { type: T }> {
  const found = buses.find((candidate) => candidate.name === name);
  assert.ok(found, `bus ${name} exists`);
  assert.equal(found.type, type);
  return found as Extract<BusConfig, { type: T }>;
}

test('without a file the built-in simulator configuration is used', () => {
  const { config, warnings } = loadConfig({});
  assert.deepEqual(warnings, []);
  assert.equal(config.file, undefined);
  assert.equal(config.apis.port, 8080);
  assert.equal(config.apis.address, '127.0.0.1');
  assert.equal(config.apis.websocket.enabled, true);
  assert.equal(config.aliasFile, resolve('alias.yaml'));
  assert.deepEqual(config.hwDefinitionDirs, []);
  const simulated = bus(config.buses, 'SIMULATED', 'SIMULATOR');
  assert.equal(simulated.toggleMs, 2000);
  assert.deepEqual(simulated.devices.map(({ name, model, slaveId, scanFrequency, scanEnabled }) => ({ name, model, slaveId, scanFrequency, scanEnabled })), [
    { name: '1', model: '00', slaveId: 1, scanFrequency: 50, scanEnabled: true },
  ]);
});

test('an empty file gives EVOK defaults, loopback address and the EVOK alias path', () => {
  const file = writeConfig(configDir(), '');
  const { config, warnings } = loadConfig({ file });
  assert.equal(config.file, file);
  assert.deepEqual(config.buses, []);
  assert.match(warnings.join('\n'), /no comm_channels section/);
  assert.deepEqual(config.logging, { level: 'INFO' });
  assert.equal(config.apis.port, 8080);
  assert.equal(config.apis.address, '127.0.0.1');
  assert.deepEqual(config.apis.websocket, { enabled: false, allFiltered: false, errorReplies: false });
  assert.deepEqual(config.apis.webhook, {
    enabled: false,
    address: 'http://127.0.0.1:80/index.html',
    deviceMask: ['di', 'sensor', 'watchdog'],
    complexEvents: false,
    meta: false,
  });
  assert.equal(config.apis.mqtt.enabled, false);
  assert.equal(config.apis.mqtt.port, 1883);
  assert.equal(config.apis.mqtt.keepalive, 60);
  assert.equal(config.apis.mqtt.qos, 0);
  assert.equal(config.apis.mqtt.retain, true);
  assert.equal(config.apis.mqtt.tls, undefined);
  assert.deepEqual(config.apis.mqtt.homeassistant, { enabled: false, discoveryPrefix: 'homeassistant' });
  assert.deepEqual(config.apis.auth, { tokens: [], users: [], sessionIdleMs: 30 * 60_000, sessionMaxMs: 12 * 3_600_000, allowAnonymous: false, loopbackAnonymous: true, allowInsecureTokens: false, corsOrigins: [] });
  assert.equal(config.aliasFile, '/var/lib/evok/alias.yaml');
});

test('autogen-style Neuron L533: three boards, bus device_info, a 1-Wire bus', () => {
  const { config, warnings } = loadConfig({ file: join(fixtures, 'neuron-l533.yaml') });
  const tcp: TcpBusConfig = bus(config.buses, 'LOCAL_TCP', 'MODBUSTCP');
  assert.equal(config.buses.length, 1);
  assert.equal(tcp.hostname, '127.0.0.1');
  assert.equal(tcp.port, 502);
  assert.equal(tcp.timeoutMs, 1000);
  assert.equal(tcp.retries, 1);
  assert.deepEqual(tcp.deviceInfo, { family: 'Neuron', model: 'L533', sn: 417, board_count: 3 });
  assert.deepEqual(tcp.devices.map((device) => [device.name, device.model, device.slaveId]), [['1', '00', 1], ['2', '13', 2], ['3', '13', 3]]);
  // The bus has a device_info and the devices have none, so EVOK registers none per device.
  assert.ok(tcp.devices.every((device) => device.deviceInfo === undefined));
  assert.deepEqual(warnings, []);
  assert.deepEqual(config.oneWireBuses, [
    { name: 'OWBUS', type: 'OWFS', hostname: '127.0.0.1', port: 4304, timeoutMs: 3000, interval: 10, scanInterval: 60, owpower: '1' },
  ]);
});

test('RS485 extensions: serial defaults, integer model 00, per-device device_info', () => {
  const { config, warnings } = loadConfig({ file: join(fixtures, 'extensions-rs485.yaml') });
  assert.deepEqual(warnings, []);
  assert.equal(config.logging.level, 'WARNING');
  assert.equal(config.apis.address, '0.0.0.0');
  const tcp = bus(config.buses, 'LOCAL_TCP', 'MODBUSTCP');
  assert.equal(tcp.devices[0].model, '00');
  assert.deepEqual(tcp.devices[0].deviceInfo, { family: 'unknown', model: '00', sn: null, board_count: 1 });
  const rtu: RtuBusConfig = bus(config.buses, 'EXTENSIONS', 'MODBUSRTU');
  assert.equal(rtu.port, '/dev/extcomm/0/0');
  assert.equal(rtu.baudrate, 19200);
  assert.equal(rtu.parity, 'N');
  assert.equal(rtu.stopbits, 1);
  assert.equal(rtu.timeoutMs, 200);
  const [xs51, xs11] = rtu.devices;
  assert.equal(xs51.name, 'xS51');
  assert.equal(xs51.scanFrequency, 10);
  assert.deepEqual(xs51.deviceInfo, { family: 'Extension', model: 'xS51', sn: null, board_count: 1 });
  assert.deepEqual(xs11.deviceInfo, { family: 'Extension', model: 'xS11', sn: 1234, board_count: 1 });
});

test('shipped layout: autogen.yaml is read first and config.yaml wins where both speak', () => {
  const { config, warnings } = loadConfig({
    file: join(fixtures, 'shipped/config.yaml'),
    autogenFile: join(fixtures, 'shipped/autogen.yaml'),
  });
  // autogen says INFO, config.yaml says WARNING.
  assert.equal(config.logging.level, 'WARNING');
  const tcp = bus(config.buses, 'LOCAL_TCP', 'MODBUSTCP');
  assert.deepEqual(tcp.deviceInfo, { family: 'Neuron', model: 'M523', sn: 88, board_count: 2 });
  // Device 2 keeps its autogen model and slave id but takes config.yaml's scan frequency.
  assert.deepEqual(tcp.devices.map((device) => [device.name, device.model, device.slaveId, device.scanFrequency]), [
    ['1', '00', 1, 50],
    ['2', '13', 2, 10],
  ]);
  assert.deepEqual(config.apis.webhook.deviceMask, ['input', 'wd']);
  assert.equal(config.apis.websocket.enabled, true);
  assert.deepEqual(warnings, []);
  assert.deepEqual(config.oneWireBuses.map((bus) => bus.name), ['OWBUS']);
});

test('autogen_file key is resolved against the config directory; the option wins over it', () => {
  const dir = configDir();
  writeConfig(dir, 'comm_channels:\n  A:\n    type: SIMULATOR\n    devices:\n      1: {model: "00"}\n', 'from-key.yaml');
  writeConfig(dir, 'comm_channels:\n  B:\n    type: SIMULATOR\n    devices:\n      1: {model: "00"}\n', 'from-option.yaml');
  const file = writeConfig(dir, 'autogen: true\nautogen_file: from-key.yaml\n');
  assert.deepEqual(loadConfig({ file }).config.buses.map((b) => b.name), ['A']);
  assert.deepEqual(loadConfig({ file, autogenFile: join(dir, 'from-option.yaml') }).config.buses.map((b) => b.name), ['B']);
});

test('autogen merge: lists and scalars from config.yaml replace, mappings merge', () => {
  const dir = configDir();
  const autogenFile = writeConfig(dir, [
    'apis:',
    '  webhook: {device_mask: [di, sensor], complex_events: true}',
    'comm_channels:',
    '  LOCAL_TCP:',
    '    type: MODBUSTCP',
    '    port: 502',
    '    devices:',
    '      1: {model: "00", slave-id: 1}',
  ].join('\n'), 'autogen.yaml');
  const file = writeConfig(dir, [
    'autogen: true',
    'apis:',
    '  webhook: {device_mask: [ro]}',
    'comm_channels:',
    '  LOCAL_TCP:',
    '    port: 503',
    '    devices:',
    '      4: {model: "08", slave-id: 4}',
  ].join('\n'));
  const { config } = loadConfig({ file, autogenFile });
  assert.deepEqual(config.apis.webhook.deviceMask, ['ro']);
  assert.equal(config.apis.webhook.complexEvents, true);
  const tcp = bus(config.buses, 'LOCAL_TCP', 'MODBUSTCP');
  assert.equal(tcp.port, 503);
  assert.deepEqual(tcp.devices.map((device) => device.name), ['1', '4']);
});

test('autogen: true with no autogen file is a warning, config.yaml is used alone', () => {
  const dir = configDir();
  const file = writeConfig(dir, 'autogen: true\ncomm_channels:\n  S:\n    type: SIMULATOR\n    devices:\n      1: {model: "00"}\n');
  const { config, warnings } = loadConfig({ file, autogenFile: join(dir, 'nowhere.yaml') });
  assert.equal(config.buses.length, 1);
  assert.equal(warnings.length, 1);
  assert.match(warnings[0], /config\.yaml:1: autogen is enabled but .*nowhere\.yaml does not exist/);
});

test('without autogen: true the autogen file is not read', () => {
  const dir = configDir();
  const autogenFile = writeConfig(dir, 'comm_channels:\n  X:\n    type: SIMULATOR\n    devices:\n      1: {model: "00"}\n', 'autogen.yaml');
  const file = writeConfig(dir, 'apis: {port: 9000}\n');
  assert.deepEqual(loadConfig({ file, autogenFile }).config.buses, []);
});

test('integer models become zero-padded board names', () => {
  const file = writeConfig(configDir(), [
    'comm_channels:',
    '  BUS:',
    '    type: MODBUSTCP',
    '    devices:',
    '      1: {model: 00, slave-id: 1}',
    '      2: {model: 13, slave-id: 2}',
    '      3: {model: 8, slave-id: 3}',
    '      4: {model: 08, slave-id: 4}',
    '      5: {model: 0A, slave-id: 5}',
    '      6: {model: 0, slave-id: 6}',
  ].join('\n'));
  const tcp = bus(loadConfig({ file }).config.buses, 'BUS', 'MODBUSTCP');
  assert.deepEqual(tcp.devices.map((device) => device.model), ['00', '13', '08', '08', '0A', '00']);
});

test('SIMULATOR fixture and per-bus timeout/retries', () => {
  const { config, warnings } = loadConfig({ file: join(fixtures, 'simulator.yaml') });
  assert.deepEqual(warnings, []);
  assert.equal(config.apis.port, 8081);
  const sim = bus(config.buses, 'SIM', 'SIMULATOR');
  assert.equal(sim.toggleMs, 500);
  assert.deepEqual(sim.devices.map((device) => [device.model, device.slaveId, device.scanFrequency]), [['00', 1, 50], ['01', 2, 20]]);

  const file = writeConfig(configDir(), 'comm_channels:\n  T:\n    type: MODBUSTCP\n    hostname: 10.0.0.5\n    timeout: 2500\n    retries: 0\n    devices:\n      1: {model: "00"}\n');
  const tcp = bus(loadConfig({ file }).config.buses, 'T', 'MODBUSTCP');
  assert.equal(tcp.hostname, '10.0.0.5');
  assert.equal(tcp.timeoutMs, 2500);
  assert.equal(tcp.retries, 0);
});

test('disabled buses and devices are skipped without checking them', () => {
  const file = writeConfig(configDir(), [
    'comm_channels:',
    '  OFF:',
    '    enabled: false',
    '    type: MODBUSRTU',
    '    parity: nonsense',
    '  ON:',
    '    type: MODBUSTCP',
    '    devices:',
    '      1: {model: "00"}',
    '      2: {enabled: false, slave-id: banana}',
    '      3: {model: "13", slave-id: 3, scan_enabled: false, scan_frequency: 0}',
  ].join('\n'));
  const { config, warnings } = loadConfig({ file });
  assert.deepEqual(warnings, []);
  assert.deepEqual(config.buses.map((b) => b.name), ['ON']);
  const devices = config.buses[0].devices;
  assert.deepEqual(devices.map((device) => device.name), ['1', '3']);
  assert.equal(devices[1].scanEnabled, false);
  assert.equal(devices[1].scanFrequency, 0);
});

test('PyYAML booleans, anchors and merge keys keep their EVOK meaning', () => {
  const file = writeConfig(configDir(), [
    'apis:',
    '  websocket: {enabled: yes, all_filtered: On}',
    'x-board: &board {model: "13", scan_frequency: 20}',
    'comm_channels:',
    '  TCP:',
    '    type: MODBUSTCP',
    '    devices:',
    '      2: {<<: *board, slave-id: 2}',
    '      3: {<<: *board, slave-id: 3, scan_frequency: 5}',
  ].join('\n'));
  const { config, warnings } = loadConfig({ file });
  assert.deepEqual(config.apis.websocket, { enabled: true, allFiltered: true, errorReplies: false });
  assert.deepEqual(config.buses[0].devices.map((device) => [device.model, device.slaveId, device.scanFrequency]), [['13', 2, 20], ['13', 3, 5]]);
  assert.equal(warnings.length, 1);
  assert.match(warnings[0], /config\.yaml:3: x-board: unknown key, ignored/);
});

test('mqtt, webhook and auth sections', () => {
  const dir = configDir();
  writeFileSync(join(dir, 'ca.pem'), 'not really a certificate');
  writeFileSync(join(dir, 'panel.token'), '  s3cret-from-file\n');
  const file = writeConfig(dir, [
    'apis:',
    '  webhook:',
    '    enabled: true',
    '    address: http://192.168.1.10:1880/evok',
    '    device_mask: di',
    '    complex_events: true',
    '  mqtt:',
    '    enabled: true',
    '    address: broker.lan',
    '    client-id: plc1',
    '    username: ""',
    '    password: 1234',
    '    qos: 1',
    '    retain: false',
    '    tls: {ca: ca.pem, reject_unauthorized: false}',
    '    homeassistant: {enabled: true}',
    '  auth:',
    '    tokens:',
    '      - {name: scada, token: abcdefabcdef, scope: write}',
    '      - {name: panel, token_file: panel.token}',
    '    allow_anonymous: false',
    '    loopback_anonymous: false',
    '    cors_origins: [https://panel.lan]',
  ].join('\n'));
  const { config, warnings } = loadConfig({ file });
  assert.match(warnings.join('\n'), /no comm_channels/);
  assert.deepEqual(config.apis.webhook, { enabled: true, address: 'http://192.168.1.10:1880/evok', deviceMask: ['di'], complexEvents: true, meta: false });
  const { mqtt, auth } = config.apis;
  assert.equal(mqtt.address, 'broker.lan');
  assert.equal(mqtt.clientId, 'plc1');
  assert.equal(mqtt.topicPrefix, 'plc1');
  assert.equal(mqtt.username, undefined);
  assert.equal(mqtt.password, '1234');
  assert.equal(mqtt.qos, 1);
  assert.equal(mqtt.retain, false);
  assert.deepEqual(mqtt.tls, { ca: join(dir, 'ca.pem'), cert: undefined, key: undefined, rejectUnauthorized: false });
  assert.deepEqual(mqtt.homeassistant, { enabled: true, discoveryPrefix: 'homeassistant' });
  assert.deepEqual(auth.tokens, [
    { name: 'scada', token: 'abcdefabcdef', scope: 'write' },
    { name: 'panel', token: 's3cret-from-file', scope: 'read' },
  ]);
  assert.equal(auth.loopbackAnonymous, false);
  assert.deepEqual(auth.corsOrigins, ['https://panel.lan']);
});

test('hw_definitions: the config directory folder first, then listed dirs, then the override', () => {
  const dir = configDir();
  for (const sub of ['hw_definitions', 'more', 'cli']) mkdirSync(join(dir, sub));
  const file = writeConfig(dir, 'hw_definitions: [more, missing]\nalias_file: state/alias.yaml\n');
  const { config, warnings } = loadConfig({ file, overrides: { hwDir: join(dir, 'cli'), port: 9999, address: '0.0.0.0' } });
  assert.deepEqual(config.hwDefinitionDirs, [join(dir, 'hw_definitions'), join(dir, 'more'), join(dir, 'cli')]);
  assert.match(warnings.join('\n'), /config\.yaml:1: hw_definitions directory .*missing does not exist, ignored/);
  assert.equal(config.aliasFile, join(dir, 'state/alias.yaml'));
  assert.equal(config.apis.port, 9999);
  assert.equal(config.apis.address, '0.0.0.0');
});

test('the built-in configuration takes overrides too', () => {
  const dir = configDir();
  const { config } = loadConfig({ overrides: { port: 18080, hwDir: dir } });
  assert.equal(config.apis.port, 18080);
  assert.deepEqual(config.hwDefinitionDirs, [dir]);
});

test('quality: stale rule and counter save interval, with defaults; counter_total per device (all, none, or listed DIs)', () => {
  const defaults = loadConfig({ file: writeConfig(configDir(), 'comm_channels: {}\n') }).config;
  assert.deepEqual(defaults.quality, { stalePeriods: 5, staleMinMs: 500, counterSaveMs: 10_000 });
  const file = writeConfig(configDir(), [
    'quality:',
    '  stale_periods: 3',
    '  stale_min_ms: 250',
    '  counter_save_interval: 2.5',
    'comm_channels:',
    '  SIM:',
    '    type: SIMULATOR',
    '    devices:',
    "      1: {model: '00'}",
    "      2: {model: '00', slave-id: 2, counter_total: false}",
    "      3: {model: '00', slave-id: 3, counter_total: ['3_01', '3_04']}",
  ].join('\n'));
  const { config, warnings } = loadConfig({ file });
  assert.deepEqual(warnings, []);
  assert.deepEqual(config.quality, { stalePeriods: 3, staleMinMs: 250, counterSaveMs: 2500 });
  assert.deepEqual(config.buses[0]!.devices.map((device) => device.counterTotal), [true, false, ['3_01', '3_04']]);
  const bad = writeConfig(configDir(), 'quality:\n  stale_periods: 0\n  stale_after: 3\ncomm_channels: {}\n');
  assert.throws(() => loadConfig({ file: bad }), /quality\.stale_periods/);
});

test('counters: per-DI unit, factor and device class for Home Assistant; mistakes are refused with their key path', () => {
  const file = writeConfig(configDir(), [
    'comm_channels:',
    '  SIM:',
    '    type: SIMULATOR',
    '    devices:',
    '      1:',
    "        model: '00'",
    '        counters:',
    '          1_01: {unit: L, factor: 0.5, device_class: water}',
    '          1_02: {unit: kWh, factor: 0.001, device_class: energy}',
    '          1_03: {unit: pulses}',
  ].join('\n'));
  const { config, warnings } = loadConfig({ file });
  assert.deepEqual(warnings, []);
  assert.deepEqual(config.buses[0]!.devices[0]!.counters, {
    '1_01': { unit: 'L', factor: 0.5, deviceClass: 'water' },
    '1_02': { unit: 'kWh', factor: 0.001, deviceClass: 'energy' },
    '1_03': { unit: 'pulses', factor: 1 },
  });
  const bad = writeConfig(configDir(), [
    'comm_channels:',
    '  SIM:',
    '    type: SIMULATOR',
    '    devices:',
    '      1:',
    "        model: '00'",
    '        counters:',
    '          1_01: {unit: L, factor: 0, device_class: beer}',
    '          1_02: {factor: 2}',
  ].join('\n'));
  assert.throws(() => loadConfig({ file: bad }), (error: Error) => {
    assert.match(error.message, /counters\.1_01\.factor/);
    assert.match(error.message, /counters\.1_01\.device_class/);
    assert.match(error.message, /counters\.1_02: missing required key 'unit'/);
    return true;
  });
});
