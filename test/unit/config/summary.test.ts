import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join, resolve } from 'node:path';
import { loadConfig } from '../../../src/config/load.js';
import { startupSummary } from '../../../src/config/summary.js';

const fixtures = resolve('fixtures/config');

test('summary of the built-in configuration', () => {
  const summary = startupSummary(loadConfig({}).config);
  assert.match(summary, /^Configuration: built-in/);
  assert.match(summary, /SIMULATED: simulator, inputs toggle every 2000 ms/);
  assert.match(summary, /device 1 +model 00 +slave 1 +50 Hz/);
  assert.match(summary, /HTTP +http:\/\/127\.0\.0\.1:8080/);
  assert.match(summary, /WebSocket +on, ws:\/\/127\.0\.0\.1:8080\/ws/);
  assert.match(summary, /Webhook +off/);
  assert.match(summary, /MQTT +off/);
  assert.match(summary, new RegExp(`Aliases: ${resolve('alias.yaml')}`));
});

test('summary lists every bus and device and fits one screen', () => {
  const { config } = loadConfig({ file: join(fixtures, 'extensions-rs485.yaml') });
  config.buses[1].devices[1].scanEnabled = false;
  const summary = startupSummary(config);
  assert.match(summary, /LOCAL_TCP: Modbus TCP 127\.0\.0\.1:502, timeout 1000 ms, 1 retry/);
  assert.match(summary, /EXTENSIONS: Modbus RTU \/dev\/extcomm\/0\/0 19200 8N1, timeout 200 ms/);
  assert.match(summary, /device xS51 +model xS51 +slave 1 +10 Hz/);
  assert.match(summary, /device xS11 +model xS11 +slave 2 +scan off/);
  assert.match(summary, /Aliases: \/var\/lib\/evok\/alias\.yaml/);
  assert.match(summary, /Logging: WARNING/);
  assert.ok(summary.split('\n').length <= 24);
});

test('summary describes enabled webhook and MQTT', () => {
  const { config } = loadConfig({});
  config.apis.webhook = { enabled: true, address: 'http://10.0.0.2/hook', deviceMask: ['di', 'wd'], complexEvents: true, meta: false };
  config.apis.mqtt = { ...config.apis.mqtt, enabled: true, address: 'broker', clientId: 'plc', topicPrefix: 'site/plc', tls: { rejectUnauthorized: true } };
  const summary = startupSummary(config);
  assert.match(summary, /Webhook +on, POST http:\/\/10\.0\.0\.2\/hook for di, wd/);
  assert.match(summary, /MQTT +on, mqtts:\/\/broker:1883 as plc, topics site\/plc\/\.\.\., qos 0/);
});

test('summary lists interlocks and covers, and nothing about them when there are none', () => {
  const { config } = loadConfig({});
  assert.doesNotMatch(startupSummary(config), /^Outputs:/m);
  config.interlocks = [{ outputs: ['do/1_01', 'pump'], dwellMs: 500, switchOver: true, where: 'interlocks[0]' }];
  config.covers = [{ name: 'blind', up: 'ro/2_01', down: 'ro/2_02', travelUpS: 30, travelDownS: 28, tiltS: 1.5, overrunS: 2, dwellMs: 500 }];
  const summary = startupSummary(config);
  assert.match(summary, /^Outputs:\n {2}interlock do\/1_01 \/ pump: never on together, 500 ms between, a write switches the other off first\n {2}cover blind: up ro\/2_01, down ro\/2_02, travel 30 s up \/ 28 s down, tilt 1.5 s$/m);
});
