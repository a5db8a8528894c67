import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { spawnDaemon, type SpawnedDaemon } from '../../helpers/spawn-daemon.js';
import { configFile } from '../../helpers/http-call.js';
import { STILL_BOARD } from '../../helpers/in-process.js';
import { schemaProblems } from '../../helpers/schema-check.js';

// /openapi.json describes what the daemon answers: every device of a
// controller with every kind of board and 1-Wire device, write replies, error
// envelopes, bulk, RPC, /version and /trends are held against the schemas the
// document gives for them. The built file (dist/openapi.json, shipped in the
// package) is the same document.

// The still board, a relay board, an analog board, an xG18, an xS30 and every 1-Wire kind.
const CONFIG = `${STILL_BOARD}      2:
        model: '01'
        slave-id: 2
      3:
        model: '13'
        slave-id: 3
      4:
        model: xG18
        slave-id: 4
      5:
        model: xS30
        slave-id: 5
  OWBUS:
    type: OWFS
    simulate: [28, 26, 29, 12]
`;

let daemon: SpawnedDaemon;
let document: Record<string, any>;

before(async () => {
  const { dir, file } = configFile(CONFIG, 'iogate-openapi-');
  daemon = await spawnDaemon(['--config', file], { cwd: dir });
  document = (await (await fetch(`${daemon.baseUrl}/openapi.json`)).json()) as Record<string, any>;
});
after(() => daemon.stop());

function check(schema: Record<string, unknown>, value: unknown, what: string): void {
  const problems = schemaProblems(document, schema, value);
  assert.deepEqual(problems, [], what);
}

const response = (path: string, method: string, status: string) => {
  let reply = document['paths'][path][method]['responses'][status];
  if (reply.$ref) reply = document['components']['responses'][String(reply.$ref).split('/').pop()!];
  return reply.content['application/json'].schema as Record<string, unknown>;
};

async function json(path: string, init?: RequestInit): Promise<{ status: number; body: unknown }> {
  const reply = await fetch(`${daemon.baseUrl}${path}`, init);
  return { status: reply.status, body: await reply.json() };
}

describe('the document', () => {
  test('is OpenAPI 3.1 with iogate\'s version, the same as the built file', () => {
    assert.equal(document['openapi'], '3.1.0');
    const { version } = JSON.parse(readFileSync(fileURLToPath(new URL('../../../package.json', import.meta.url)), 'utf8')) as { version: string };
    assert.equal(document['info']['version'], version);
    const built = JSON.parse(readFileSync(fileURLToPath(new URL('../../../dist/openapi.json', import.meta.url)), 'utf8'));
    assert.deepEqual(built, document);
  });

  test('has EVOK\'s paths and iogate\'s own', () => {
    for (const path of ['/{format}/all', '/{format}/{type}/all', '/{format}/{type}/{circuit}', '/{format}/{type}/{circuit}/{property}', '/bulk', '/rpc', '/version', '/metrics', '/trends', '/openapi.json', '/']) {
      assert.ok(document['paths'][path], path);
    }
  });

  test('a device write documents pulse_ms, in both bodies', () => {
    const body = document['paths']['/{format}/{type}/{circuit}']['post']['requestBody']['content'];
    assert.deepEqual(body['application/json']['schema']['properties']['pulse_ms'], { ...body['application/json']['schema']['properties']['pulse_ms'], type: 'integer', minimum: 1, maximum: 86_400_000 });
    assert.match(body['application/x-www-form-urlencoded']['schema']['properties']['pulse_ms']['description'], /do, ro and led/);
  });
});

describe('replies hold to it', () => {
  test('every device of /rest/all and /json/all', async () => {
    for (const path of ['/rest/all', '/json/all']) {
      const { status, body } = await json(path);
      assert.equal(status, 200);
      const types = new Set((body as Array<{ dev: string }>).map((device) => device.dev));
      for (const dev of ['di', 'do', 'ro', 'led', 'ai', 'ao', 'wd', 'register', 'data_point', 'modbus_slave', 'temp', '1wdevice', 'owbus', 'owpower', 'device_info']) {
        assert.ok(types.has(dev), `${path} holds a ${dev}`);
      }
      check(response('/{format}/all', 'get', '200'), body, path);
    }
    check(response('/{format}/{type}/{circuit}', 'get', '200'), (await json('/rest/run/alias')).body, 'run/alias');
  });

  test('a write reply, a field, a type listing, and error envelopes', async () => {
    const written = await json('/rest/do/1_01', { method: 'POST', body: new URLSearchParams({ value: '1' }) });
    assert.equal(written.status, 200);
    check(response('/{format}/{type}/{circuit}', 'post', '200'), written.body, 'write reply');
    check(response('/{format}/{type}/{circuit}/{property}', 'get', '200'), (await json('/rest/do/1_01/value')).body, 'field');
    check(response('/{format}/{type}/all/{property}', 'get', '200'), (await json('/json/ai/all/value')).body, 'field of all');
    for (const [path, init, status] of [
      ['/rest/nosuch/1', undefined, '404'],
      ['/rest/do/9_99', undefined, '404'],
      ['/rest/do/1_01', { method: 'POST', body: new URLSearchParams({ value: 'abc' }) }, '400'],
      ['/json/do/1_01', { method: 'POST', body: '{' }, '400'],
    ] as const) {
      const reply = await json(path, init);
      assert.equal(String(reply.status), status, path);
      check(response('/{format}/{type}/{circuit}', 'get', status), reply.body, `${path} error`);
    }
  });

  test('bulk and JSON-RPC', async () => {
    const bulk = await json('/bulk', {
      method: 'POST',
      body: JSON.stringify({
        group_queries: [{ device_types: ['ai'] }],
        individual_assignments: [
          { device_type: 'do', device_circuit: '1_02', assigned_values: { value: 1 } },
          { device_type: 'do', device_circuit: '9_99', assigned_values: { value: 1 } },
        ],
      }),
    });
    check(response('/bulk', 'post', '200'), bulk.body, 'bulk');
    const rpc = await json('/rpc', {
      method: 'POST',
      body: JSON.stringify([
        { jsonrpc: '2.0', id: 1, method: 'input_get', params: ['1_01'] },
        { jsonrpc: '2.0', id: 2, method: 'no_such', params: [] },
      ]),
    });
    check(response('/rpc', 'post', '200'), rpc.body, 'rpc');
  });

  test('/version and /trends', async () => {
    const version = await (await fetch(`${daemon.baseUrl}/version`)).text();
    check(document['paths']['/version']['get']['responses']['200'].content['text/html'].schema, version, '/version');
    const trends = await json('/trends');
    check(response('/trends', 'get', '200'), trends.body, '/trends');
    const series = (trends.body as { series: Array<{ dev: string; field: string }> }).series;
    for (const [dev, field] of [['ai', 'value'], ['ao', 'value'], ['temp', 'value'], ['1wdevice', 'humidity']]) {
      assert.ok(series.some((one) => one.dev === dev && one.field === field), `a ${dev} ${field} series`);
    }
  });
});
