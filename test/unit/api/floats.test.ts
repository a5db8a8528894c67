import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { floatText, jsonText, objectJson, RawJson } from '../../../src/text/json-text.js';
import { startGate, type Gate } from '../../helpers/in-process.js';
import { connect, deviceIn } from '../../helpers/ws-client.js';

// Numbers EVOK writes as Python floats stay floats on the wire (`4800.0`,
// `5.0`, `0.0`), on every API, while ints stay ints. Checked on the reply
// text: a JSON parser would hide the difference.

describe('float text', () => {
  test('whole numbers get .0, others are as JavaScript writes them, non-finite ones null', () => {
    assert.equal(floatText(5), '5.0');
    assert.equal(floatText(0), '0.0');
    assert.equal(floatText(-0), '-0.0');
    assert.equal(floatText(48_000_000), '48000000.0');
    assert.equal(floatText(39.0625), '39.0625');
    assert.equal(floatText(-2.5), '-2.5');
    assert.equal(floatText(1e21), '1e+21');
    assert.equal(floatText(Number.NaN), 'null');
    assert.equal(floatText(null), 'null');
    assert.equal(floatText('NaN'), '"NaN"');
  });

  test('objects and envelopes keep the raw texts placed in them', () => {
    assert.equal(objectJson({ a: 1, b: 2, c: 'x', d: undefined }, (field) => field === 'b'), '{"a":1,"b":2.0,"c":"x"}');
    assert.equal(jsonText({ id: 1, result: new RawJson('5.0'), list: [new RawJson('{"v":1.0}'), undefined] }), '{"id":1,"result":5.0,"list":[{"v":1.0},null]}');
  });
});

let gate: Gate;
const at = (path: string, init?: RequestInit) => fetch(`${gate.baseUrl}${path}`, init);
const text = async (path: string, init?: RequestInit) => (await at(path, init)).text();
const post = (path: string, body: unknown) => text(path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });

before(async () => {
  gate = await startGate();
  assert.equal(JSON.parse(await post('/json/ao/1_01', { value: 5 })).success, true);
});

after(async () => {
  await gate.close();
});

describe('on the wire', () => {
  test('do: pwm_freq of the hardware timer is a float, pwm_duty 0 and the rest ints', async () => {
    const body = await text('/rest/do/1_01');
    assert.match(body, /"pwm_freq":4800\.0,"pwm_duty":0,"glob_dev_id":1\}$/);
    assert.match(body, /"value":[01],/);
    assert.match(await text('/rest/do/1_01/pwm_freq'), /^\{"pwm_freq":4800\.0\}$/);
    assert.match(await text('/rest/do/all/pwm_freq'), /^\[\{"circuit":"1_01","pwm_freq":4800\.0\},/);
    // A duty other than 0 is a float too (EVOK rounds it to one decimal).
    const pwm = JSON.parse(await post('/json/do/1_04', { pwm_duty: 50 }));
    assert.equal(pwm.success, true);
    assert.match(await text('/rest/do/1_04'), /"pwm_duty":50\.0,/);
  });

  test('ao and ai value: floats, ints inside their modes stay ints', async () => {
    const ao = await text('/rest/ao/1_01');
    assert.match(ao, /"value":5\.0\}$/);
    assert.match(ao, /"Voltage":\{"value":0,/);
    assert.match(await text('/rest/ai/1_01'), /"value":-?\d+\.\d+,/);
    assert.match(await text('/rest/ao/1_01/value'), /^\{"value":5\.0\}$/);
  });

  test('modbus_slave scan_interval and last_comm are floats', async () => {
    const slave = await text('/rest/modbus_slave/1');
    assert.match(slave, /"last_comm":\d+\.\d+,/);
    assert.match(slave, /"scan_interval":\d+\.\d+,/);
  });

  test('JSON-RPC: ao_set_value answers 5.0, getters keep floats, ints stay ints', async () => {
    const call = (method: string, params: unknown[]) => post('/rpc', { jsonrpc: '2.0', id: 1, method, params });
    assert.equal(await call('ao_set_value', ['1_01', 5]), '{"jsonrpc":"2.0","id":1,"result":5.0}');
    assert.equal(await call('ao_get_value', ['1_01']), '{"jsonrpc":"2.0","id":1,"result":5.0}');
    assert.match(await call('ao_get', ['1_01']), /"value":5\.0\}\}$/);
    assert.match(await call('do_set', ['1_02', 1]), /"pwm_freq":4800\.0,/);
    assert.match(await call('output_set', ['1_02', 0]), /"result":0\}$/);
    assert.match(await call('input_get', ['1_01']), /"result":\[[01],50\]\}$/);
  });

  test('bulk: queries and assignments keep floats', async () => {
    const reply = await post('/bulk', {
      group_queries: [{ device_types: ['ao'] }],
      individual_assignments: [{ device_type: 'ao', device_circuit: '1_01', assigned_values: { value: 5 } }],
    });
    assert.match(reply, /^\{"group_queries":\[\[\{"dev":"ao",.*"value":5\.0\}\]\],"individual_assignments":\[\{"dev":"ao",.*"value":5\.0\}\]\}$/);
  });

  test('WebSocket: pushes and all carry the same text', async () => {
    const client = await connect(gate.wsUrl);
    const raw: string[] = [];
    client.ws.on('message', (data) => raw.push(String(data)));
    try {
      client.send({ cmd: 'set', dev: 'ao', circuit: '1_01', value: 3 });
      await client.nextMatching((message) => deviceIn(message, 'ao', '1_01')?.value === 3);
      assert.ok(raw.some((frame) => frame.includes('"value":3.0}')), raw.join('\n'));
      client.send({ cmd: 'all' });
      await client.nextMatching((message) => Array.isArray(message) && message.length > 10);
      assert.match(raw[raw.length - 1]!, /"pwm_freq":4800\.0/);
    } finally {
      await client.close();
    }
  });
});
