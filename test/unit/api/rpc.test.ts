import assert from 'node:assert/strict';
import { configFile } from '../../helpers/http-call.js';
import { after, before, describe, test } from 'node:test';
import { postBody } from '../../helpers/post-body.js';
import { spawnDaemon, type SpawnedDaemon } from '../../helpers/spawn-daemon.js';

// JSON-RPC over HTTP against the built daemon with its built-in simulated board.

let daemon: SpawnedDaemon;
const rpc = (body: unknown) => postBody(`${daemon.baseUrl}/rpc`, body);
let nextId = 1;
async function call(method: string, params?: unknown): Promise<any> {
  const id = nextId++;
  const { status, body } = await rpc({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) });
  assert.equal(status, 200);
  assert.equal(body.id, id);
  assert.equal(body.jsonrpc, '2.0');
  return body;
}

before(async () => {
  daemon = await spawnDaemon([]);
});

after(async () => {
  await daemon.stop();
});

describe("EVOK's methods", () => {
  test('input_get answers [value, debounce]; input_get_value the value', async () => {
    const { result } = await call('input_get', ['1_01']);
    assert.equal(result.length, 2);
    assert.equal(result[1], 50);
    assert.equal((await call('input_get_value', ['1_01'])).result, result[0]);
  });

  test('input_set writes the debounce (EVOK: HTTP 500, nothing written)', async () => {
    const { result } = await call('input_set', ['1_02', 80]);
    assert.equal(result.debounce, 80);
    assert.equal((await call('input_get', ['1_02'])).result[1], 80);
  });

  test('output_set with the string "0" switches OFF (EVOK: ON)', async () => {
    assert.equal((await call('output_set', ['1_01', 1])).result, 1);
    assert.equal((await call('output_set', ['1_01', '0'])).result, 0);
    assert.deepEqual((await call('output_get', ['1_01'])).result, [0, false]);
  });

  test('output_set_for_time answers the device and refuses a timeout ≤ 0', async () => {
    const { result } = await call('output_set_for_time', ['1_02', 1, 30]);
    assert.equal(result.value, 1);
    assert.equal(result.pending, true);
    assert.equal((await call('output_set_for_time', ['1_02', 1, 0])).error.code, -32602);
    await call('output_set', ['1_02', 0]);
  });
});

describe('the generic family', () => {
  test('di_get answers the full device (EVOK: method not found)', async () => {
    const { result } = await call('di_get', ['1_03']);
    assert.equal(result.dev, 'di');
    assert.equal(result.circuit, '1_03');
  });

  test('do_set(circuit, value) writes and answers the confirmed device; do_get_value reads it', async () => {
    assert.equal((await call('do_set', ['1_03', 1])).result.value, 1);
    assert.equal((await call('do_get_value', ['1_03'])).result, 1);
    assert.equal((await call('do_set', ['1_03', { value: 0 }])).result.value, 0);
  });

  test('named parameters, and further named keys as fields', async () => {
    assert.equal((await call('do_set', { circuit: '1_04', value: 1 })).result.value, 1);
    assert.equal((await call('di_set', { circuit: '1_04', debounce: 20 })).result.debounce, 20);
    assert.equal((await call('do_get', { circuit: 'al_nothing' })).error.code, -32602);
  });
});

describe('protocol', () => {
  test('a batch answers in order, leaving out notifications', async () => {
    const { body } = await rpc([
      { jsonrpc: '2.0', id: 'a', method: 'di_get_value', params: ['1_01'] },
      { jsonrpc: '2.0', method: 'do_set', params: ['1_04', 0] },
      { jsonrpc: '2.0', id: 'c', method: 'nope' },
      7,
    ]);
    assert.deepEqual(body.map((response: { id: unknown }) => response.id), ['a', 'c', null]);
    assert.equal(body[1].error.code, -32601);
    assert.equal(body[2].error.code, -32600);
    assert.equal((await call('do_get_value', ['1_04'])).result, 0, 'the notification ran');
  });

  test('a notification or an all-notification batch gets 204 and no body', async () => {
    assert.equal((await rpc({ jsonrpc: '2.0', method: 'do_set', params: ['1_04', 0] })).status, 204);
    const batch = await rpc([{ jsonrpc: '2.0', method: 'do_get', params: ['1_04'] }, { jsonrpc: '2.0', method: 'nope' }]);
    assert.equal(batch.status, 204);
    assert.equal(batch.body, undefined);
  });

  test('JSON-RPC 1.0 requests are answered in 1.0 shape; a null id is a notification', async () => {
    const { body } = await rpc({ id: 9, method: 'input_get', params: ['1_01'] });
    assert.deepEqual(Object.keys(body).sort(), ['error', 'id', 'result']);
    assert.equal(body.error, null);
    assert.equal(body.result[1], 50);
    const failed = (await rpc({ id: 10, method: 'nope', params: [] })).body;
    assert.equal(failed.result, null);
    assert.equal(failed.error.code, -32601);
    assert.equal((await rpc({ id: null, method: 'input_get', params: ['1_01'] })).status, 204);
  });

  const errors: Array<[string, unknown, number]> = [
    ['parse error', '{"jsonrpc": "2.0", "method"', -32700],
    ['empty batch', [], -32600],
    ['method not a string', { jsonrpc: '2.0', id: 1, method: 5 }, -32600],
    ['wrong version', { jsonrpc: '3.0', id: 1, method: 'di_get' }, -32600],
    ['params neither list nor object', { jsonrpc: '2.0', id: 1, method: 'di_get', params: '1_01' }, -32600],
    ['unknown method', { jsonrpc: '2.0', id: 1, method: 'di_explode', params: ['1_01'] }, -32601],
    ['handler internals are not methods (EVOK called any attribute)', { jsonrpc: '2.0', id: 1, method: 'finish', params: [] }, -32601],
    ['unknown circuit (EVOK 3.0.4+)', { jsonrpc: '2.0', id: 1, method: 'di_get', params: ['9_99'] }, -32602],
    ['too few params', { jsonrpc: '2.0', id: 1, method: 'do_set', params: ['1_01'] }, -32602],
    ['too many params', { jsonrpc: '2.0', id: 1, method: 'di_get', params: ['1_01', 2] }, -32602],
    ['unexpected named param', { jsonrpc: '2.0', id: 1, method: 'di_get', params: { circuit: '1_01', x: 1 } }, -32602],
    ['invalid value', { jsonrpc: '2.0', id: 1, method: 'relay_set', params: ['1_01', 'maybe'] }, -32602],
    ['read-only field', { jsonrpc: '2.0', id: 1, method: 'di_set', params: ['1_01', { value: 1 }] }, -32602],
  ];
  for (const [name, request, code] of errors) {
    test(`${name} → ${code}`, async () => {
      const { status, body } = await rpc(request);
      assert.equal(status, 200);
      assert.equal(body.error.code, code);
      assert.equal(typeof body.error.message, 'string');
      if (name === 'parse error' || name === 'empty batch') assert.equal(body.id, null);
    });
  }

  test('GET → 405; trailing slash works', async () => {
    assert.equal((await fetch(`${daemon.baseUrl}/rpc`)).status, 405);
    assert.equal((await postBody(`${daemon.baseUrl}/rpc/`, { jsonrpc: '2.0', id: 1, method: 'di_get', params: ['1_01'] })).body.result.dev, 'di');
  });
});

test('a slave that does not answer → -32603 internal error', async () => {
  // Nothing listens on port 9 (discard) here: every poll fails and the slave goes offline.
  const { dir, file: config } = configFile(
    'comm_channels:\n  TCP:\n    type: MODBUSTCP\n    hostname: 127.0.0.1\n    port: 9\n    timeout: 50\n    devices:\n      1:\n        model: "00"\n',
    'iogate-rpc-offline-',
  );
  const offline = await spawnDaemon(['--config', config], { cwd: dir });
  try {
    let body;
    for (let attempt = 0; attempt < 200; attempt++) {
      body = (await postBody(`${offline.baseUrl}/rpc`, { jsonrpc: '2.0', id: 1, method: 'do_set', params: ['1_01', 1] })).body;
      if (body.error?.code === -32603) break;
    }
    assert.equal(body.error.code, -32603);
    assert.match(body.error.message, /^Internal error: /);
  } finally {
    await offline.stop();
  }
});
