import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { loadConfig } from '../../../src/config/load.js';
import { ConfigError } from '../../../src/config/errors.js';
import { tempDir } from '../../helpers/temp-dir.js';

const broken = resolve('fixtures/config/broken');

function writeConfig(lines: string[]): string {
  const file = join(tempDir('iogate-config-'), 'config.yaml');
  writeFileSync(file, lines.join('\n'));
  return file;
}

/** The problems a file is rejected with; fails the test when it loads. */
function problemsOf(file: string): readonly string[] {
  try {
    loadConfig({ file });
  } catch (error) {
    assert.ok(error instanceof ConfigError, `expected a ConfigError, got ${String(error)}`);
    return error.problems;
  }
  assert.fail(`${file} was accepted`);
}

test('wrong slave-id type names file:line, key path and expectation', () => {
  const file = join(broken, 'slave-id-type.yaml');
  assert.deepEqual(problemsOf(file), [`${file}:7: comm_channels.LOCAL_TCP.devices.1.slave-id: expected an integer 0..247, got 'abc'`]);
});

test('bad indentation is a YAML error with line and column', () => {
  const file = join(broken, 'bad-indentation.yaml');
  const [problem, ...rest] = problemsOf(file);
  assert.deepEqual(rest, []);
  assert.ok(problem.startsWith(`${file}:7:`), problem);
  assert.match(problem, /invalid YAML: All mapping items must start at the same column/);
});

test('a missing model points at the device', () => {
  const file = join(broken, 'missing-model.yaml');
  assert.deepEqual(problemsOf(file), [`${file}:6: comm_channels.EXTENSIONS.devices.xS51: missing required key 'model' (the board's hw definition name, e.g. '00' or 'xS51')`]);
});

test('a wrong parity lists the accepted values', () => {
  const file = join(broken, 'wrong-parity.yaml');
  assert.deepEqual(problemsOf(file), [`${file}:6: comm_channels.EXTENSIONS.parity: expected one of N, E, O, got 'X'`]);
});

test('the error message carries every problem, one per line', () => {
  const file = writeConfig([
    'logging: {level: LOUD}',
    'apis:',
    '  port: 70000',
    '  websocket: {enabled: maybe}',
    'comm_channels:',
    '  RTU:',
    '    type: MODBUSRTU',
    '    stopbits: 3',
    '    devices:',
    '      1: {model: [a], slave-id: 248, scan_frequency: -1}',
  ]);
  try {
    loadConfig({ file });
    assert.fail('accepted');
  } catch (error) {
    assert.ok(error instanceof ConfigError);
    assert.deepEqual(error.problems, [
      `${file}:1: logging.level: expected one of CRITICAL, ERROR, WARNING, INFO, DEBUG, got 'LOUD'`,
      `${file}:3: apis.port: expected an integer 1..65535, got '70000'`,
      `${file}:4: apis.websocket.enabled: expected true or false, got 'maybe'`,
      `${file}:6: comm_channels.RTU: missing required key 'port' (the serial device, e.g. /dev/extcomm/0/0)`,
      `${file}:8: comm_channels.RTU.stopbits: expected one of 1, 2, got '3'`,
      `${file}:10: comm_channels.RTU.devices.1.model: expected a hw definition name such as '00' or 'xS51', got a list`,
      `${file}:10: comm_channels.RTU.devices.1.slave-id: expected an integer 0..247, got '248'`,
      `${file}:10: comm_channels.RTU.devices.1.scan_frequency: expected a number >= 0, got '-1'`,
    ]);
    assert.equal(error.message.split('\n').length, 1 + error.problems.length);
    assert.match(error.message, /^Invalid configuration \(8 problems\):/);
  }
});

test('errors in the autogen file name the autogen file', () => {
  const dir = tempDir('iogate-config-');
  const autogenFile = join(dir, 'autogen.yaml');
  writeFileSync(autogenFile, 'comm_channels:\n  LOCAL_TCP:\n    type: MODBUSTCP\n    devices:\n      1: {model: "00", slave-id: one}\n');
  const file = join(dir, 'config.yaml');
  writeFileSync(file, 'autogen: true\n');
  assert.throws(() => loadConfig({ file, autogenFile }), (error: unknown) => {
    assert.ok(error instanceof ConfigError);
    assert.deepEqual(error.problems, [`${autogenFile}:5: comm_channels.LOCAL_TCP.devices.1.slave-id: expected an integer 0..247, got 'one'`]);
    return true;
  });
});

test('MQTT needs a broker and a client id only when enabled', () => {
  assert.doesNotThrow(() => loadConfig({ file: writeConfig(['apis:', '  mqtt: {enabled: false}']) }));
  const file = writeConfig(['apis:', '  mqtt:', '    enabled: true', '    tls: {ca: /nonexistent/ca.pem}']);
  const problems = problemsOf(file);
  assert.equal(problems.length, 3);
  assert.equal(problems[0], `${file}:2: apis.mqtt: missing required key 'address' (the broker host name)`);
  assert.equal(problems[1], `${file}:2: apis.mqtt: missing required key 'client-id' (the MQTT client id, also the default topic prefix)`);
  assert.match(problems[2], new RegExp(`^${file}:4: apis\\.mqtt\\.tls\\.ca: cannot read /nonexistent/ca\\.pem`));
});

test('bad webhook URL, wildcard topic prefix and token mistakes', () => {
  const file = writeConfig([
    'apis:',
    '  webhook: {enabled: true, address: "127.0.0.1/hook"}',
    '  mqtt: {enabled: true, address: broker, client-id: plc, topic_prefix: "plc/#"}',
    '  auth:',
    '    tokens:',
    '      - {name: a, token: same-token-1}',
    '      - {name: a, token: same-token-1, scope: owner}',
    '      - {name: c}',
    '      - {name: d, token_file: missing.token}',
    '      - just-a-string',
  ]);
  const problems = problemsOf(file);
  assert.deepEqual(problems.slice(0, 2), [
    `${file}:2: apis.webhook.address: expected an http:// or https:// URL, got '127.0.0.1/hook'`,
    `${file}:3: apis.mqtt.topic_prefix: must not contain the MQTT wildcards + or #, got 'plc/#'`,
  ]);
  assert.equal(problems[2], `${file}:7: apis.auth.tokens[1].scope: expected one of read, write, admin, got 'owner'`);
  assert.equal(problems[3], `${file}:7: apis.auth.tokens[1].name: duplicate token name 'a'`);
  assert.equal(problems[4], `${file}:7: apis.auth.tokens[1]: the same token is listed twice`);
  assert.equal(problems[5], `${file}:8: apis.auth.tokens[2]: give exactly one of 'token' and 'token_file'`);
  assert.match(problems[6], new RegExp(`^${file}:9: apis\\.auth\\.tokens\\[3\\]\\.token_file: cannot read .*missing\\.token`));
  assert.equal(problems[7], `${file}:10: apis.auth.tokens[4]: expected a mapping, got 'just-a-string'`);
  assert.equal(problems.length, 8);
});

test('structural YAML problems: duplicate keys, a list at the top, unreadable file', () => {
  const duplicate = writeConfig(['apis:', '  port: 1', '  port: 2']);
  const [problem] = problemsOf(duplicate);
  assert.match(problem, new RegExp(`^${duplicate}:3:\\d+: invalid YAML: Map keys must be unique`));

  const list = writeConfig(['- apis']);
  assert.deepEqual(problemsOf(list), [`${list}:1: the top level must be a mapping (apis:, comm_channels:, ...)`]);

  const missing = join(tmpdir(), 'iogate-no-such-dir', 'config.yaml');
  assert.equal(problemsOf(missing)[0], `${missing}: no such file`);
});

test('unknown keys are warnings with file:line in file order, with hints for EVOK doc spellings and close misspellings', () => {
  const file = writeConfig([
    'apis:',
    '  websoket: {enabled: true}',
    'comm_channels:',
    '  RTU:',
    '    type: MODBUSRTU',
    '    port: /dev/ttyS1',
    '    boudrate: 9600',
    '    devices:',
    '      1:',
    '        model: xS10',
    '        slave_id: 3',
    '        colour: red',
    '        scan_frequncy: 10',
    'extra: 1',
  ]);
  const { warnings } = loadConfig({ file });
  assert.deepEqual(warnings, [
    `${file}:2: apis.websoket: unknown key, ignored (did you mean 'websocket'?)`,
    `${file}:7: comm_channels.RTU.boudrate: unknown key, ignored (did you mean 'baudrate'?)`,
    `${file}:11: comm_channels.RTU.devices.1.slave_id: unknown key, ignored (did you mean 'slave-id'?)`,
    `${file}:12: comm_channels.RTU.devices.1.colour: unknown key, ignored`,
    `${file}:13: comm_channels.RTU.devices.1.scan_frequncy: unknown key, ignored (did you mean 'scan_frequency'?)`,
    `${file}:14: extra: unknown key, ignored`,
  ]);
});

test('a bus without devices is a warning, not an error; 1-Wire buses are read apart', () => {
  const file = writeConfig([
    'comm_channels:',
    '  ONEWIRE: {type: OWBUS, interval: 10}',
    '  EMPTY: {type: MODBUSTCP}',
    '  A: {type: SIMULATOR, devices: {1: {model: "00"}}}',
  ]);
  const { config, warnings } = loadConfig({ file });
  assert.deepEqual(config.buses.map((bus) => bus.name), ['EMPTY', 'A']);
  assert.deepEqual(config.oneWireBuses.map((bus) => [bus.name, bus.type, bus.interval]), [['ONEWIRE', 'OWBUS', 10]]);
  assert.deepEqual(warnings, [
    `${file}:3: comm_channels.EMPTY: bus has no devices`,
  ]);
});

describe('what would misroute writes stops start-up', () => {
  test('the same device name on two buses: its circuits would be one', () => {
    const file = writeConfig([
      'comm_channels:',
      '  A:',
      '    type: SIMULATOR',
      '    devices:',
      '      1:',
      "        model: '00'",
      '  B:',
      '    type: MODBUSTCP',
      '    devices:',
      '      1:',
      "        model: '01'",
      '        slave-id: 2',
    ]);
    assert.deepEqual(problemsOf(file), [`${file}:10: comm_channels.B.devices.1: device name '1' is also used on bus A (${file}:5): their circuits would be the same`]);
  });

  test('two devices with one slave id on one bus (1 when not given); the same id on another bus is fine', () => {
    const file = writeConfig([
      'comm_channels:',
      '  A:',
      '    type: SIMULATOR',
      '    devices:',
      '      1:',
      "        model: '00'",
      '      2:',
      "        model: '01'",
      '        slave-id: 1',
      '      3:',
      "        model: '01'",
      '        slave-id: 3',
      '  B:',
      '    type: SIMULATOR',
      '    devices:',
      '      4:',
      "        model: '01'",
      '        slave-id: 3',
    ]);
    assert.deepEqual(problemsOf(file), [`${file}:9: comm_channels.A.devices.2.slave-id: slave-id 1 is also device 1's on this bus (${file}:5)`]);
  });

  test('an unknown or missing bus type; 1-Wire buses (OWFS, OWBUS) are known', () => {
    const file = writeConfig([
      'comm_channels:',
      '  A:',
      '    type: MODBUSUDP',
      '    devices:',
      '      1:',
      "        model: '00'",
      '  B:',
      '    devices:',
      '      2:',
      "        model: '00'",
      '  C:',
      '    type: OWFS',
      '  D:',
      '    type: OWBUS',
    ]);
    assert.deepEqual(problemsOf(file), [
      `${file}:3: comm_channels.A.type: unknown bus type 'MODBUSUDP' (MODBUSTCP, MODBUSRTU, SIMULATOR, OWFS or OWBUS)`,
      `${file}:7: comm_channels.B: missing required key 'type' (MODBUSTCP, MODBUSRTU, SIMULATOR, OWFS or OWBUS)`,
    ]);
  });

  test('a disabled bus or device is not checked', () => {
    const file = writeConfig([
      'comm_channels:',
      '  A:',
      '    type: SIMULATOR',
      '    devices:',
      '      1:',
      "        model: '00'",
      '      2:',
      '        enabled: false',
      "        model: '01'",
      '  B:',
      '    enabled: false',
      '    type: NOTHING',
    ]);
    loadConfig({ file });
  });
});
