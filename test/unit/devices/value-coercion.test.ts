import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startGate, STILL_BOARD, type Gate } from '../../helpers/in-process.js';
import { connect, deviceIn, type TestClient } from '../../helpers/ws-client.js';

// On/off `value` of do, ro and led as EVOK judges it: Python's int(), then
// truthiness, the same through REST, JSON, bulk, JSON-RPC and the WebSocket
// (MQTT in test/unit/mqtt/commands.test.ts). Each case first puts the output
// in the opposite state, so a value that did nothing cannot pass.

let gate: Gate;
let ws: TestClient;

before(async () => {
  // A Brain section (do, led) and a relay section (ro).
  gate = await startGate(`${STILL_BOARD}      2:\n        model: "01"\n        slave-id: 2\n`);
  ws = await connect(`${gate.wsUrl}?errors=1`);
});

after(async () => {
  await ws.close();
  await gate.close();
});

/** Values that switch on, off, or are refused with the error key EVOK used. */
const ON: unknown[] = [1, 2, 255, -1, 1.5, true, '1', '2', ' 2 ', '+3', '1_0', '255'];
const OFF: unknown[] = [0, 0.5, -0.9, false, '0', ' 0 ', '-0', '00'];
const VALUE_ERRORS: unknown[] = ['abc', '1.5', '', '1e3', '0x1', 'on'];
const SCHEMA_ERRORS: unknown[] = [null, [1], { on: 1 }];

type Outcome = { value: number } | { error: string };
type Api = (dev: string, circuit: string, value: unknown) => Promise<Outcome>;

async function fromEnvelope(response: Response): Promise<Outcome> {
  const body = await response.json();
  if (body.success === true) return { value: body.result.value };
  assert.ok(response.status >= 400 && response.status < 500, `status ${response.status}`);
  return { error: Object.keys(body.errors)[0]! };
}

const post = (path: string, body: string, type: string) =>
  fetch(`${gate.baseUrl}${path}`, { method: 'POST', headers: { 'Content-Type': type }, body });

const APIS: Record<string, Api> = {
  'REST form': async (dev, circuit, value) =>
    fromEnvelope(await post(`/rest/${dev}/${circuit}`, new URLSearchParams({ value: String(value) }).toString(), 'application/x-www-form-urlencoded')),
  JSON: async (dev, circuit, value) => fromEnvelope(await post(`/json/${dev}/${circuit}`, JSON.stringify({ value }), 'application/json')),
  bulk: async (dev, circuit, value) => {
    const response = await post('/bulk', JSON.stringify({ individual_assignments: [{ device_type: dev, device_circuit: circuit, assigned_values: { value } }] }), 'application/json');
    const [item] = (await response.json()).individual_assignments;
    return item.success === false ? { error: Object.keys(item.errors)[0]! } : { value: item.value };
  },
  'JSON-RPC T_set': async (dev, circuit, value) => {
    const response = await post('/rpc', JSON.stringify({ jsonrpc: '2.0', id: 1, method: `${dev}_set`, params: [circuit, value] }), 'application/json');
    const body = await response.json();
    if (!body.error) return { value: body.result.value };
    assert.equal(body.error.code, -32602);
    // The error's data is EVOK's envelope content: the same keys as the other APIs.
    return { error: Object.keys(body.error.data)[0]! };
  },
  'WebSocket set': async (dev, circuit, value) => {
    ws.send({ cmd: 'set', dev, circuit, value });
    const answer = await ws.nextMatching((message) => Boolean(deviceIn(message, dev, circuit)) || message.success === false);
    return Array.isArray(answer) ? { value: deviceIn(answer, dev, circuit).value } : { error: Object.keys(answer.errors)[0]! };
  },
};

/** EVOK's RPC names for outputs answer the new value itself. */
const RPC_VALUE_SETTERS: Record<string, string> = { ro: 'relay_set', do: 'output_set' };

async function current(dev: string, circuit: string): Promise<number> {
  return (await (await fetch(`${gate.baseUrl}/rest/${dev}/${circuit}`)).json()).value;
}

async function put(dev: string, circuit: string, value: 0 | 1): Promise<void> {
  if ((await current(dev, circuit)) === value) return;
  const response = await post(`/json/${dev}/${circuit}`, JSON.stringify({ value }), 'application/json');
  assert.equal(response.status, 200);
  // Let the WebSocket client see this change before the case's own.
  await ws.nextMatching((message) => deviceIn(message, dev, circuit)?.value === value);
}

const OUTPUTS: Array<[string, string]> = [
  ['do', '1_01'],
  ['led', '1_02'],
  ['ro', '2_03'],
];

for (const [apiName, write] of Object.entries(APIS)) {
  describe(apiName, () => {
    // Form bodies carry text only: the typed cases are for the JSON APIs.
    const applies = (value: unknown) => apiName !== 'REST form' || typeof value === 'string';
    for (const [dev, circuit] of OUTPUTS) {
      test(`${dev}: on for ${JSON.stringify(ON.filter(applies))}, off for ${JSON.stringify(OFF.filter(applies))}`, async () => {
        for (const [values, expected] of [
          [ON, 1],
          [OFF, 0],
        ] as const) {
          for (const value of values.filter(applies)) {
            await put(dev, circuit, expected === 1 ? 0 : 1);
            assert.deepEqual(await write(dev, circuit, value), { value: expected }, `${JSON.stringify(value)}`);
            assert.equal(await current(dev, circuit), expected, `${JSON.stringify(value)} as read back`);
          }
        }
      });

      test(`${dev}: ValueError for text int() cannot read; nothing switches`, async () => {
        for (const expected of [0, 1] as const) {
          await put(dev, circuit, expected);
          for (const value of VALUE_ERRORS.filter(applies)) {
            const outcome = await write(dev, circuit, value);
            assert.deepEqual(outcome, { error: 'ValueError' }, JSON.stringify(value));
            assert.equal(await current(dev, circuit), expected);
          }
        }
      });

      if (apiName !== 'REST form') {
        test(`${dev}: ValidationError for null, lists and objects`, async () => {
          await put(dev, circuit, 1);
          for (const value of SCHEMA_ERRORS) {
            // An object `value` names fields in RPC and WebSocket `set`; {"on":1} is then an unknown
            // field, which `ro` (no schema in EVOK) refuses as its set() did, with a TypeError.
            const outcome = await write(dev, circuit, value);
            const fieldsNamed = apiName === 'JSON-RPC T_set' || apiName === 'WebSocket set';
            const unknownField = fieldsNamed && dev === 'ro' && typeof value === 'object' && value !== null && !Array.isArray(value);
            assert.deepEqual(outcome, { error: unknownField ? 'TypeError' : 'ValidationError' }, JSON.stringify(value));
          }
          assert.equal(await current(dev, circuit), 1);
        });
      }
    }
  });
}

describe("EVOK's own RPC setters", () => {
  for (const [dev, method] of Object.entries(RPC_VALUE_SETTERS)) {
    const circuit = OUTPUTS.find(([type]) => type === dev)![1];
    test(`${method} takes 255 and "2" as on, "0" and 0.5 as off, and answers the value`, async () => {
      for (const [value, expected] of [
        [255, 1],
        ['0', 0],
        ['2', 1],
        [0.5, 0],
      ] as const) {
        await put(dev, circuit, expected === 1 ? 0 : 1);
        const response = await post('/rpc', JSON.stringify({ jsonrpc: '2.0', id: 7, method, params: [circuit, value] }), 'application/json');
        assert.deepEqual(await response.json(), { jsonrpc: '2.0', id: 7, result: expected });
        assert.equal(await current(dev, circuit), expected);
      }
    });
  }
});
