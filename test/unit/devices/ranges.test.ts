import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { simulatorYaml } from '../../helpers/daemon.js';
import { FORM, httpCall } from '../../helpers/http-call.js';
import { startGate, type Gate } from '../../helpers/in-process.js';
import { connect } from '../../helpers/ws-client.js';

// Numeric writes are checked against the range the device advertises, in the
// one write path every API shares: a value out of range is a 400 (or an error
// object) on every interface, and nothing reaches the board.

let gate: Gate;
const board = (unit: number) => gate.runtime.simulations.get('SIM')!.boards.get(unit)!;
/** Brain AO set point (float32 words) and the extension's first AO register. */
const watched = () => [board(1).get('holding', 3000), board(1).get('holding', 3001), board(2).get('holding', 2)];

before(async () => {
  gate = await startGate(`apis:\n  websocket:\n    enabled: true\n${simulatorYaml({ 1: '00', 2: '0F' })}`);
});
after(() => gate.close());

/** Out of range or not a finite number for the AO's active mode (Voltage, 0..10 V). */
const BAD_VALUES: unknown[] = [1e308, '1e308', 10.5, -0.1, 'Infinity', 'NaN', '', [], {}, true];

async function rejectedEverywhere(circuit: string, value: unknown): Promise<void> {
  const form = await httpCall(gate.baseUrl, `/rest/ao/${circuit}`, { method: 'POST', headers: FORM, body: `value=${encodeURIComponent(String(value))}` });
  assert.equal(form.status, 400, `REST ${circuit} ${String(value)}: ${form.text}`);
  const json = await httpCall(gate.baseUrl, `/json/ao/${circuit}`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ value }) });
  assert.equal(json.status, 400, `JSON ${circuit} ${JSON.stringify(value)}: ${json.text}`);
  assert.equal(json.json.success, false);
  const bulk = await httpCall(gate.baseUrl, '/bulk', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ individual_assignments: [{ dev: 'ao', circuit, value }] }),
  });
  assert.equal(bulk.json.individual_assignments[0].success, false, `bulk ${JSON.stringify(value)}: ${bulk.text}`);
  const rpc = await httpCall(gate.baseUrl, '/rpc', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ao_set', params: [circuit, value] }),
  });
  assert.ok(rpc.json.error, `RPC ${JSON.stringify(value)}: ${rpc.text}`);
}

test('Brain and extension AO refuse values outside their mode range, and non-numbers, on REST, JSON, bulk and RPC', async () => {
  const before = watched();
  for (const circuit of ['1_01', '2_01']) for (const value of BAD_VALUES) await rejectedEverywhere(circuit, value);
  assert.deepEqual(watched(), before, 'no register was written');
  const good = await httpCall(gate.baseUrl, '/rest/ao/1_01', { method: 'POST', headers: FORM, body: 'value=10' });
  assert.equal(good.status, 200, good.text);
  assert.equal(good.json.result.value, 10, 'the top of the range itself is accepted');
});

test('the range follows the mode: 15 is fine in Current (0..20 mA), not in Voltage', async () => {
  const both = await httpCall(gate.baseUrl, '/json/ao/1_01', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"mode":"Current","value":15}' });
  assert.equal(both.status, 200, both.text);
  assert.equal(both.json.result.value, 15);
  const voltage = await httpCall(gate.baseUrl, '/json/ao/1_01', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"mode":"Voltage","value":15}' });
  assert.equal(voltage.status, 400, voltage.text);
  assert.match(voltage.json.errors.ValidationError, /0\.\.10 V/);
  assert.equal(board(1).get('holding', 1019), 1, 'the refused request switched no mode either');
});

test('the WebSocket set refuses them too: nothing is written', async () => {
  const client = await connect(gate.wsUrl);
  try {
    const before = watched();
    for (const value of [1e308, 10.5, -1, 'x']) {
      client.send({ cmd: 'set', dev: 'ao', circuit: '2_01', value });
      client.send({ cmd: 'set', dev: 'ao', circuit: '1_01', value: 1e308 });
    }
    // Commands run in order: once `full` is answered every set before it has run.
    client.send({ cmd: 'full', dev: 'ao', circuit: '2_01' });
    await client.nextMatching((message) => !Array.isArray(message) && message.dev === 'ao');
    assert.deepEqual(watched(), before);
  } finally {
    await client.close();
  }
});

test('other numeric fields keep their ranges: debounce, watchdog timeout, pwm', async () => {
  const cases: Array<[string, string]> = [
    ['/rest/di/1_01', 'debounce=1e308'],
    ['/rest/di/1_01', 'debounce=-1'],
    ['/rest/wd/1_01', 'timeout=70000'],
    ['/rest/do/1_01', 'pwm_duty=101'],
    ['/rest/do/1_01', 'pwm_freq=Infinity'],
    ['/rest/do/1_01', 'timeout=1e308'],
  ];
  for (const [path, body] of cases) {
    const reply = await httpCall(gate.baseUrl, path, { method: 'POST', headers: FORM, body });
    assert.equal(reply.status, 400, `${path} ${body}: ${reply.text}`);
  }
});
