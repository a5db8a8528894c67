import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { renderMetrics } from '../../../src/api/http/metrics.js';
import { createLogger } from '../../../src/logging/log.js';
import { get, list, postForm, postJson, type Loose } from '../../helpers/http.js';
import { startGate, until, type Gate } from '../../helpers/in-process.js';
import { TestOwserver } from '../../helpers/owserver.js';
import { connect, type TestClient } from '../../helpers/ws-client.js';
import { tempDir } from '../../helpers/temp-dir.js';

// A daemon with a simulated Modbus board and a 1-Wire bus on a test owserver
// (real TCP, real owserver messages): what EVOK's clients see of the sensors,
// and how the daemon behaves when sensors or owserver go away.

let owserver: TestOwserver;
let gate: Gate;
let ws: TestClient;
const logged: string[] = [];

/** Circuits: addresses without dots. */
let thermometer: string;
let thermometerAddress: string;
let multisensor: string;
let pio: string;

before(async () => {
  owserver = await TestOwserver.start(['28', '26', '29', '10']);
  [thermometerAddress] = owserver.devices.addresses as [string];
  [thermometer, multisensor, pio] = owserver.devices.addresses.map((address) => address.replace(/\./g, '')) as [string, string, string];
  owserver.devices.setTemperature(thermometerAddress, 23.4375);
  // Saved by EVOK: a thermometer by its circuit, a DS2408 by its dotted circuit (EVOK's bug).
  const aliasFile = join(tempDir('iogate-ow-aliases-'), 'alias.yaml');
  writeFileSync(
    aliasFile,
    `aliases:\n  'boiler':\n    circuit: '${thermometer}'\n    devtype: 'temp'\n  'garage_inputs':\n    circuit: '${owserver.devices.addresses[2]}'\n    devtype: 'sensor'\nversion: '2.0'\n`,
  );
  gate = await startGate(
    `
alias_file: ${aliasFile}
apis:
  websocket:
    enabled: true
comm_channels:
  SIM:
    type: SIMULATOR
    toggle_ms: 0
    devices:
      1:
        model: "00"
  OW:
    type: OWFS
    port: ${owserver.port}
    timeout: 300
    interval: 1
    scan_interval: 1
    owpower: 1
`,
    { log: createLogger('DEBUG', (line) => logged.push(line)) },
  );
  ws = await connect(gate.wsUrl);
  await until(() => gate.runtime.oneWire[0]!.bus.sensors.size === 4, 'discovery');
});

after(async () => {
  await ws.close();
  await gate.close();
  await owserver.stop();
});

const sensor = async (circuit: string): Promise<Loose> => (await get(`${gate.baseUrl}/rest/sensor/${circuit}`)).body;

test('thermometers are `temp` objects with EVOK fields, order and types, at /rest/temp and /rest/sensor', async () => {
  await until(() => gate.runtime.registry.find('sensor', thermometer)?.full()['value'] !== null, 'first read');
  const reply = await get(`${gate.baseUrl}/rest/temp/${thermometer}`);
  assert.equal(reply.status, 200);
  const body = reply.body as Record<string, unknown>;
  // EVOK's fields, then `alias` (this one has an alias from the saved file).
  assert.deepEqual(Object.keys(body), ['dev', 'circuit', 'address', 'value', 'lost', 'time', 'interval', 'type', 'alias']);
  assert.equal(body['dev'], 'temp');
  assert.equal(body['circuit'], thermometer);
  assert.equal(body['address'], thermometerAddress);
  assert.equal(body['value'], 23.45, '23.4375 rounded to 0.05 °C');
  assert.equal(body['lost'], false);
  assert.equal(typeof body['time'], 'number');
  assert.ok(Math.abs((body['time'] as number) - Date.now() / 1000) < 60, 'time is a Unix timestamp in seconds');
  assert.equal(body['interval'], 1);
  assert.equal(body['type'], 'DS18B20');
  assert.deepEqual(await sensor(thermometer), body);
  const ds18s20 = owserver.devices.addresses[3]!.replace(/\./g, '');
  assert.equal((await sensor(ds18s20))['dev'], 'temp');
  assert.equal((await sensor(ds18s20))['type'], 'DS18S20');
});

test('a DS2438 is a `1wdevice` with EVOK fields; a DS2408 has a dot-less circuit and a numeric value', async () => {
  await until(() => gate.runtime.registry.find('sensor', multisensor)?.full()['time'] !== null, 'first read');
  const multi = await sensor(multisensor);
  assert.deepEqual(Object.keys(multi), ['dev', 'circuit', 'humidity', 'vdd', 'vad', 'temp', 'vis', 'lost', 'time', 'interval', 'type']);
  assert.equal(multi['dev'], '1wdevice');
  for (const field of ['humidity', 'vdd', 'vad', 'temp', 'vis']) assert.equal(typeof multi[field], 'number', field);
  assert.equal(multi['type'], 'DS2438');

  await until(() => gate.runtime.registry.find('sensor', pio)?.full()['time'] !== null, 'first read');
  const chip = await sensor(pio);
  assert.deepEqual(Object.keys(chip), ['dev', 'circuit', 'address', 'value', 'type', 'lost', 'time', 'interval', 'alias']);
  assert.equal(chip['circuit'], pio);
  assert.ok(!String(chip['circuit']).includes('.'));
  assert.ok(Number.isInteger(chip['value']) && (chip['value'] as unknown as number) >= 0 && (chip['value'] as unknown as number) < 256);
  assert.equal(chip['type'], 'DS2408');
});

test('/rest/all lists sensors after ao and before led, owbus after data_point; a DS2408 never breaks it', async () => {
  const reply = await get(`${gate.baseUrl}/rest/all`);
  assert.equal(reply.status, 200);
  const devs = list(reply.body).map((device) => String(device['dev']));
  const first = (dev: string) => devs.indexOf(dev);
  const last = (dev: string) => devs.lastIndexOf(dev);
  assert.equal(devs.filter((dev) => dev === 'temp' || dev === '1wdevice').length, 4);
  const sensorsFrom = Math.min(first('temp'), first('1wdevice'));
  const sensorsTo = Math.max(last('temp'), last('1wdevice'));
  assert.ok(last('ao') < sensorsFrom && sensorsTo < first('led'), `order: ${devs.join(',')}`);
  assert.ok(last('data_point') < first('owbus') || first('data_point') === -1);
  assert.ok(first('owbus') > last('register'));
});

test('the owbus object and its RPC methods', async () => {
  const owbus = (await get(`${gate.baseUrl}/rest/owbus/OW`)).body;
  assert.deepEqual(owbus, { dev: 'owbus', circuit: 'OW', bus: 'OWFS', scan_interval: 1, interval: 1, do_scan: false, do_reset: false });
  const rpc = async (method: string, params: unknown[]) => (await postJson(`${gate.baseUrl}/rpc`, { jsonrpc: '2.0', id: 1, method, params })).body;
  assert.deepEqual(await rpc('owbus_get', ['OW']), { jsonrpc: '2.0', id: 1, result: 1 });
  const listing = (await rpc('owbus_list', ['OW']))['result'] as Record<string, unknown>;
  assert.deepEqual(Object.keys(listing).slice(0, 5), ['DS18S20', 'DS18B20', 'DS2438', 'DS2408', 'DS2413']);
  assert.deepEqual(listing['DS18B20'], [thermometerAddress]);
  assert.deepEqual(listing['DS2413'], []);
  const got = (await rpc('sensor_get', [thermometer]))['result'] as unknown as unknown[];
  assert.equal(got.length, 4);
  assert.deepEqual([got[0], got[1], got[3]], [23.45, false, 1]);
  assert.deepEqual(await rpc('sensor_get_value', [thermometer]), { jsonrpc: '2.0', id: 1, result: 23.45 });
  const set = (await rpc('sensor_set', [thermometer, 2]))['result'] as Record<string, unknown>;
  assert.equal(set['interval'], 2);
  const bus = (await rpc('owbus_set', ['OW', 30]))['result'] as Record<string, unknown>;
  assert.equal(bus['scan_interval'], 30);
  const before = owserver.connections;
  const scanned = (await rpc('owbus_scan', ['OW']))['result'] as Record<string, unknown>;
  assert.equal(scanned['dev'], 'owbus');
  assert.ok(owserver.connections > before, 'owbus_scan searched the bus before answering');
  await postForm(`${gate.baseUrl}/rest/owbus/OW`, { scan_interval: '1', interval: '1' });
});

test("aliases saved by EVOK reach sensors found after start-up (a DS2408's dotted circuit too)", async () => {
  assert.equal((await get(`${gate.baseUrl}/rest/temp/boiler`)).body['circuit'] as unknown, thermometer);
  assert.equal((await sensor(thermometer))['alias'], 'boiler');
  assert.equal((await get(`${gate.baseUrl}/rest/sensor/garage_inputs`)).body['circuit'] as unknown, pio);
});

test('writes: interval (form string), alias; bad values are a 400 with nothing applied', async () => {
  const written = await postForm(`${gate.baseUrl}/rest/temp/${thermometer}`, { interval: '5', alias: 'living_room' });
  assert.equal(written.status, 200);
  assert.equal(written.body['success'] as unknown, true);
  assert.equal(written.body['result']!['interval'] as unknown, 5);
  assert.equal(written.body['result']!['alias'] as unknown, 'living_room');
  assert.equal((await get(`${gate.baseUrl}/rest/temp/living_room`)).body['circuit'] as unknown, thermometer);
  const bad = await postForm(`${gate.baseUrl}/rest/sensor/${thermometer}`, { interval: 'abc' });
  assert.equal(bad.status, 400);
  assert.equal(Object.keys(bad.body['errors']!)[0], 'ValueError', 'number text Python cannot read is EVOK\'s ValueError');
  assert.equal((await sensor(thermometer))['interval'], 5);
  // The bus interval goes to every sensor, as in EVOK.
  await postForm(`${gate.baseUrl}/rest/owbus/OW`, { interval: '1' });
  assert.equal((await sensor(thermometer))['interval'], 1);
  await postForm(`${gate.baseUrl}/rest/temp/${thermometer}`, { alias: 'boiler' });
});

test('do_reset pulses the owpower coil and searches again; do_reset=0 does nothing', async () => {
  const before = owserver.connections;
  const pulses = () => gate.board.actions.filter((action) => action === 'owpower').length;
  const writes = gate.board.writes;
  const reset = await postForm(`${gate.baseUrl}/rest/owbus/OW`, { do_reset: '1' });
  assert.equal(reset.status, 200);
  assert.equal(pulses(), 1, 'the owpower coil was switched on once');
  assert.equal(gate.board.writes, writes + 2, 'on, then off');
  assert.ok(owserver.connections > before, 'searched after the reset');
  const none = await postForm(`${gate.baseUrl}/rest/owbus/OW`, { do_reset: '0' });
  assert.equal(none.status, 200);
  assert.equal(gate.board.writes, writes + 2, 'do_reset=0 wrote nothing (EVOK reset on false too)');
});

test('a power-on 85 °C reading is discarded once; a second one in a row is real', async () => {
  const read = () => postForm(`${gate.baseUrl}/rest/owbus/OW`, { interval: '1' });
  const time = async () => (await sensor(thermometer))['time'];
  owserver.devices.setTemperature(thermometerAddress, 85);
  const timeBefore = await time();
  const requests = owserver.connections;
  await read();
  // Four devices, read one after the other: the thermometer's read is among them.
  await until(() => owserver.connections >= requests + 4, 'a round of reads');
  assert.equal((await sensor(thermometer))['value'], 23.45, 'the jump to 85 was dropped');
  assert.equal(await time(), timeBefore, 'no good read was recorded');
  await read();
  await until(() => gate.runtime.registry.find('sensor', thermometer)!.full()['value'] === 85, 'second 85 accepted');
  owserver.devices.setTemperature(thermometerAddress, 23.4375);
});

test('a sensor that leaves the bus is lost, pushed once as such, and comes back by itself', async () => {
  const address = owserver.devices.addresses[1]!;
  owserver.devices.setPresent(address, false);
  const lostPushes = () => ws.received.filter((message) => Array.isArray(message) && message.some((item: Record<string, unknown>) => item['circuit'] === multisensor && item['lost'] === true)).length;
  const from = ws.received.length;
  await until(() => lostPushes() >= 1, 'the lost push', 5000);
  const lost = await sensor(multisensor);
  assert.equal(lost['lost'], true);
  assert.equal(typeof lost['temp'], 'number', 'the last values are kept');
  await new Promise((resolve) => setTimeout(resolve, 2500));
  assert.equal(lostPushes(), 1, 'pushed once, although searches and retries went on');
  assert.ok(ws.received.slice(from).every((message) => Array.isArray(message)), 'every push is an array');
  owserver.devices.setPresent(address, true);
  await until(() => gate.runtime.registry.find('sensor', multisensor)!.full()['lost'] === false, 'recovery', 5000);
});

test('owserver going away: sensors lost once, logged once, Modbus and HTTP unaffected; back when it returns', async () => {
  const slave = gate.runtime.slaves[0]!;
  const scansBefore = slave.stats.scans;
  const warningsBefore = logged.filter((line) => line.startsWith('WARNING') && line.includes('owserver')).length;
  const lostPushes = () => ws.received.filter((message) => Array.isArray(message) && message.some((item: Record<string, unknown>) => item['circuit'] === thermometer && item['lost'] === true)).length;
  const pushesBefore = lostPushes();
  await owserver.stop();
  await until(() => lostPushes() === pushesBefore + 1, 'lost push', 5000);
  // Several probes fail meanwhile (1 s, 2 s …); /rest/all answers throughout.
  let answered = 0;
  const until3s = Date.now() + 3500;
  while (Date.now() < until3s) {
    const reply = await get(`${gate.baseUrl}/rest/all`);
    assert.equal(reply.status, 200);
    answered++;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.ok(answered > 20);
  assert.ok(slave.stats.scans > scansBefore + 20, 'Modbus scans went on');
  assert.equal(lostPushes(), pushesBefore + 1, 'lost pushed once');
  for (const device of gate.runtime.registry.list('sensor')) assert.equal(device.full()['lost'], true);
  const warnings = logged.filter((line) => line.startsWith('WARNING') && line.includes('owserver'));
  assert.equal(warnings.length, warningsBefore + 1, `logged once: ${warnings.join(' | ')}`);
  const down = renderMetrics(gate.runtime);
  assert.match(down, /^iogate_owbus_connected\{bus="OW"\} 0$/m);
  assert.match(down, /^iogate_owbus_lost_sensors\{bus="OW"\} 4$/m);

  await owserver.listen();
  await until(() => gate.runtime.registry.list('sensor').every((device) => device.full()['lost'] === false), 'recovery', 10_000);
  assert.equal(logged.filter((line) => line.includes('answers again') && line.includes('owserver')).length, 1);
  const up = renderMetrics(gate.runtime);
  assert.match(up, /^iogate_owbus_connected\{bus="OW"\} 1$/m);
  assert.match(up, /^iogate_owbus_sensors\{bus="OW"\} 4$/m);
  assert.match(up, /^iogate_owbus_lost_sensors\{bus="OW"\} 0$/m);
  assert.ok(Number(/^iogate_owbus_failed_requests_total\{bus="OW"\} (\d+)$/m.exec(up)![1]) > 0);
});

test('a silent owserver delays neither HTTP answers nor Modbus scans', async () => {
  owserver.behaviour = 'silent';
  const slave = gate.runtime.slaves[0]!;
  const scansBefore = slave.stats.scans;
  const connectionsBefore = owserver.connections;
  await postForm(`${gate.baseUrl}/rest/owbus/OW`, { interval: '1' });
  await until(() => owserver.connections > connectionsBefore, 'a request to the silent owserver');
  for (let i = 0; i < 20; i++) assert.equal((await get(`${gate.baseUrl}/rest/all`)).status, 200);
  assert.equal((await get(`${gate.baseUrl}/rest/temp/${thermometer}`)).status, 200);
  await until(() => slave.stats.scans > scansBefore + 5, 'Modbus scans during the hung request');
  owserver.behaviour = 'serve';
  await until(() => gate.runtime.registry.list('sensor').every((device) => device.full()['lost'] === false), 'recovery', 10_000);
});

test('a 1-Wire bus without owserver: the daemon starts, says so once, and serves the rest', async () => {
  const nowhere = await TestOwserver.start();
  await nowhere.stop();
  const lines: string[] = [];
  const lonely = await startGate(
    `
alias_file: alias.yaml
comm_channels:
  SIM:
    type: SIMULATOR
    devices:
      1:
        model: "00"
  OWBUS:
    type: OWBUS
    port: ${nowhere.port}
    interval: 1
    scan_interval: 1
`,
    { log: createLogger('INFO', (line) => lines.push(line)) },
  );
  try {
    await new Promise((resolve) => setTimeout(resolve, 2500));
    assert.equal(lines.filter((line) => line.includes('owserver')).length, 1, lines.join(''));
    assert.match(lines.find((line) => line.includes('owserver'))!, /^WARNING .*OWBUS.*127\.0\.0\.1:\d+ does not answer/);
    assert.deepEqual((await get(`${lonely.baseUrl}/rest/sensor/all`)).body, []);
    assert.equal((await get(`${lonely.baseUrl}/rest/owbus/OWBUS`)).body['bus'] as unknown, 'OWBUS');
    assert.equal((await get(`${lonely.baseUrl}/rest/di/1_01`)).status, 200);
    const reset = await postForm(`${lonely.baseUrl}/rest/owbus/OWBUS`, { do_reset: '1' });
    assert.equal(reset.status, 400);
    assert.match(JSON.stringify(reset.body), /1W reset is not supported/);
    const scan = await postForm(`${lonely.baseUrl}/rest/owbus/OWBUS`, { do_scan: '1' });
    assert.equal(scan.status, 503, 'a search that owserver did not answer is not a success');
    assert.equal(Object.keys(scan.body['errors']!)[0], 'OwserverUnreachable');
    assert.equal(lines.filter((line) => line.includes('owserver')).length, 1, 'still said once');
  } finally {
    await lonely.close();
  }
});
