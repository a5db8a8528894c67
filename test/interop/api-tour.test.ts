import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { configFile } from '../helpers/http-call.js';
import { spawnDaemon, type SpawnedDaemon } from '../helpers/spawn-daemon.js';

// Every HTTP route of the API once, reads, writes and refusals, against a
// controller with every kind of board and 1-Wire device. With IOGATE_PRISM set
// (CI) the traffic goes through Prism with iogate's /openapi.json, which fails
// the test on any request or reply the document does not describe, and
// through Prism with Unipi's Evok_API_OAS.yaml, whose violations CI lists
// (docs/differences-from-evok.md). Without it the tour still checks statuses.

const CONFIG = `
apis:
  websocket:
    enabled: true
comm_channels:
  LOCAL:
    type: SIMULATOR
    toggle_ms: 0
    device_info:
      family: Neuron
      model: M523
    devices:
      1:
        model: '00'
      2:
        model: '13'
        slave-id: 2
  RS485:
    type: SIMULATOR
    toggle_ms: 0
    devices:
      3:
        model: '01'
        slave-id: 3
      4:
        model: xG18
        slave-id: 4
  OWBUS:
    type: OWFS
    simulate: [28, 26, 12]
`;

let daemon: SpawnedDaemon;
before(async () => {
  const { dir, file } = configFile(CONFIG, 'iogate-tour-');
  daemon = await spawnDaemon(['--config', file], { cwd: dir });
});
after(() => daemon.stop());

async function call(method: string, path: string, body?: string, contentType?: string): Promise<{ status: number; text: string }> {
  const reply = await fetch(`${daemon.apiUrl}${path}`, { method, body, headers: contentType ? { 'Content-Type': contentType } : {} });
  return { status: reply.status, text: await reply.text() };
}

const form = (path: string, fields: Record<string, string>) => call('POST', path, new URLSearchParams(fields).toString(), 'application/x-www-form-urlencoded');
const json = (path: string, body: unknown) => call('POST', path, JSON.stringify(body), 'application/json');

async function expect(status: number, reply: Promise<{ status: number; text: string }>, what: string): Promise<string> {
  const { status: got, text } = await reply;
  assert.equal(got, status, `${what}: ${text.slice(0, 300)}`);
  return text;
}

test('reads: listings, every type, one device of each, one field', async () => {
  const all = JSON.parse(await expect(200, call('GET', '/rest/all'), '/rest/all')) as Array<Record<string, unknown>>;
  await expect(200, call('GET', '/json/all'), '/json/all');
  const firstOf = new Map<string, Record<string, unknown>>();
  for (const device of all) if (!firstOf.has(String(device['dev']))) firstOf.set(String(device['dev']), device);
  for (const type of ['di', 'do', 'ro', 'led', 'ai', 'ao', 'wd', 'watchdog', 'register', 'data_point', 'modbus_slave', 'sensor', 'temp', 'owbus', 'owpower', 'device_info', 'input', 'relay', 'output', 'analoginput']) {
    await expect(200, call('GET', `/rest/${type}/all`), `/rest/${type}/all`);
  }
  await expect(200, call('GET', '/json/ai/all/value'), 'field of all');
  for (const [dev, device] of firstOf) {
    const type = dev === '1wdevice' ? 'sensor' : dev;
    await expect(200, call('GET', `/rest/${type}/${device['circuit']}`), `${type} ${device['circuit']}`);
    await expect(200, call('GET', `/json/${type}/${device['circuit']}/circuit`), `${type} field`);
  }
  await expect(200, call('GET', '/rest/run/alias'), 'run/alias');
  await expect(200, call('GET', '/version'), '/version');
  await expect(200, call('GET', '/metrics'), '/metrics');
  await expect(200, call('GET', '/trends'), '/trends');
  await expect(200, call('GET', '/openapi.json'), '/openapi.json');
});

test('writes: every writable type, forms and JSON', async () => {
  await expect(200, form('/rest/do/1_01', { value: '1' }), 'do form');
  await expect(200, json('/json/do/1_01', { value: 0 }), 'do json');
  await expect(200, form('/rest/relay/3_01', { value: '1' }), 'relay');
  await expect(200, json('/json/led/1_01', { value: true }), 'led');
  await expect(200, json('/json/ao/2_01', { value: 2.5 }), 'ao');
  await expect(200, form('/rest/ai/2_01', { mode: 'Voltage' }), 'ai mode');
  await expect(200, form('/rest/di/1_01', { debounce: '60' }), 'di debounce');
  await expect(200, json('/json/wd/1_01', { timeout: 4000 }), 'wd timeout');
  await expect(200, form('/rest/register/1_20', { value: '3' }), 'register');
  await expect(200, form('/rest/owbus/OWBUS', { interval: '20' }), 'owbus interval');
  await expect(200, json('/json/owbus/OWBUS', { do_scan: true }), 'owbus scan');
  const sensor = (JSON.parse((await call('GET', '/rest/temp/all')).text) as Array<{ circuit: string }>)[0]!;
  await expect(200, json(`/json/temp/${sensor.circuit}`, { interval: 15 }), 'sensor interval');
  await expect(200, form('/rest/do/1_02/value', { value: '1' }), 'write through a property path');
  await expect(200, form('/rest/do/1_03', { alias: 'pump' }), 'alias');
  await expect(200, call('GET', '/rest/do/pump'), 'by alias');
  await expect(200, form('/rest/run/alias', { save: '1' }), 'save aliases');
  await expect(200, form('/rest/do/1_03', { alias: '' }), 'alias removed');
  await expect(204, call('OPTIONS', '/rest/do/1_01'), 'preflight');
});

test('refusals: EVOK\'s error envelope with a status that fits', async () => {
  await expect(404, call('GET', '/rest/nosuch/1'), 'unknown type');
  await expect(404, call('GET', '/rest/do/9_99'), 'unknown circuit');
  await expect(404, call('GET', '/rest/do/1_01/nosuch'), 'unknown property');
  await expect(400, form('/rest/do/1_01', { value: 'abc' }), 'bad value');
  await expect(400, json('/json/do/1_01', { nosuch: 1 }), 'unknown field');
  await expect(400, call('POST', '/json/do/1_01', '{', 'application/json'), 'bad JSON');
  await expect(400, json('/json/ao/2_01', { value: 99 }), 'out of range');
  await expect(400, json('/json/data_point/4_1', { value: 1 }), 'read-only');
  await expect(405, call('POST', '/version', 'x=1', 'application/x-www-form-urlencoded'), 'method');
});

test('bulk and JSON-RPC', async () => {
  await expect(200, json('/bulk', {
    group_queries: [{ device_types: ['ai', 'ao'] }, { group: 3 }],
    group_assignments: [{ device_types: ['led'], group: 1, assigned_values: { value: 0 } }],
    individual_assignments: [
      { device_type: 'do', device_circuit: '1_04', assigned_values: { value: 1 } },
      { device_type: 'do', device_circuit: '9_99', assigned_values: { value: 1 } },
    ],
  }), 'bulk');
  await expect(200, json('/rpc', [
    { jsonrpc: '2.0', id: 1, method: 'input_get', params: ['1_01'] },
    { jsonrpc: '2.0', id: 2, method: 'relay_set', params: ['3_02', 1] },
    { jsonrpc: '2.0', id: 3, method: 'ai_get', params: ['2_01'] },
    { jsonrpc: '2.0', id: 4, method: 'owbus_list', params: [] },
    { jsonrpc: '2.0', id: 5, method: 'no_such_method', params: [] },
  ]), 'rpc batch');
  await expect(200, json('/rpc', { jsonrpc: '2.0', id: 6, method: 'do_get', params: ['1_01'] }), 'rpc single');
  await expect(204, json('/rpc', { jsonrpc: '2.0', method: 'do_set', params: ['1_04', 0] }), 'rpc notification');
});
