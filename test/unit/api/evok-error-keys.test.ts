import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { STILL_BOARD, startGate, type Gate } from '../../helpers/in-process.js';

// The error keys EVOK clients may test, for the cases where EVOK's key
// depends on how EVOK failed (reference: EVOK's API notes §4, §5): an unknown
// property is Python's AttributeError; a field a type without a schema does
// not take is set()'s TypeError; device_info has no setter (AttributeError);
// a data_point write is EVOK's plain Exception; `/json` reads its body as
// JSON whatever the Content-Type, so a form body is a JSONDecodeError.

// The still board (a Brain board as slave 1), a relay board and an xG18 with data points.
const BOARDS = `${STILL_BOARD}      2:
        model: "01"
        slave-id: 2
      3:
        model: xG18
        slave-id: 3
`;

let gate: Gate;

before(async () => {
  gate = await startGate(BOARDS);
});

after(async () => {
  await gate.close();
});

async function answer(path: string, init?: RequestInit): Promise<{ status: number; errors: Record<string, string> }> {
  const response = await fetch(`${gate.baseUrl}${path}`, init);
  const body = (await response.json()) as { success: boolean; errors: Record<string, string> };
  assert.equal(body.success, false, path);
  return { status: response.status, errors: body.errors };
}

const form = (fields: string): RequestInit => ({ method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: fields });
const json = (body: unknown): RequestInit => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

test('an unknown property is an AttributeError; one starting with _ is refused by name', async () => {
  const unknown = await answer('/rest/do/1_01/nosuch');
  assert.deepEqual(unknown.errors, { AttributeError: "'do' object has no attribute 'nosuch'" });
  assert.equal(unknown.status, 404);
  assert.deepEqual((await answer('/json/di/1_01/_cache')).errors, { Exception: "Invalid property name '_cache'" });
});

test('types EVOK checked with no schema refuse an unknown field with set()\'s TypeError', async () => {
  for (const [path, init] of [
    ['/rest/ro/2_01', form('foo=1')],
    ['/json/ro/2_01', json({ timeout: 5 })],
    ['/rest/nv_save/1', form('foo=1')],
  ] as const) {
    const { status, errors } = await answer(path, init);
    assert.equal(status, 400, path);
    assert.deepEqual(Object.keys(errors), ['TypeError'], path);
    assert.match(errors['TypeError']!, /^set\(\) got an unexpected keyword argument '(foo|timeout)'/);
  }
  const slave = await answer('/rest/modbus_slave/1', form('print_log=1'));
  assert.deepEqual(Object.keys(slave.errors), ['TypeError']);
});

test('types EVOK had a schema for keep its ValidationError', async () => {
  assert.deepEqual(Object.keys((await answer('/rest/do/1_01', form('foo=1'))).errors), ['ValidationError']);
  assert.deepEqual(Object.keys((await answer('/rest/di/1_01', form('value=1'))).errors), ['ValidationError']);
});

test('device_info has no setter; a data_point is read-only in EVOK\'s words', async () => {
  assert.deepEqual((await answer('/rest/device_info/1', form('model=x'))).errors, { AttributeError: "'DeviceInfo' object has no attribute 'set'" });
  const point = await answer('/json/data_point/3_1', json({ value: 5 }));
  assert.deepEqual(point.errors, { Exception: 'Data point object is read-only' });
  assert.equal(point.status, 400);
  // Its alias is still written, with nothing else.
  const aliased = await fetch(`${gate.baseUrl}/json/data_point/3_1`, json({ alias: 'room' }));
  assert.equal(aliased.status, 200);
});

test('/json reads its body as JSON whatever the Content-Type, as EVOK did', async () => {
  // curl -d '{"value":1}' sends application/x-www-form-urlencoded.
  const written = await fetch(`${gate.baseUrl}/json/do/1_02`, form('{"value":1}'));
  assert.equal(written.status, 200);
  assert.equal(((await written.json()) as { result: { value: number } }).result.value, 1);
  const notJson = await answer('/json/do/1_02', form('value=0'));
  assert.equal(notJson.status, 400);
  assert.deepEqual(Object.keys(notJson.errors), ['JSONDecodeError']);
  assert.equal(((await (await fetch(`${gate.baseUrl}/rest/do/1_02`)).json()) as { value: number }).value, 1, 'nothing written');
});

test('a Modbus bus named under tcp_bus is found but has no JSON form: an AttributeError', async () => {
  const bus = await answer('/rest/tcp_bus/SIM');
  assert.deepEqual(bus.errors, { AttributeError: "'tcp_bus' object has no attribute 'full'" });
  assert.equal(bus.status, 404);
  assert.deepEqual(Object.keys((await answer('/json/tcp_bus/SIM', json({ value: 1 }))).errors), ['AttributeError']);
  // A name that is no bus is not defined, as for any type; the types EVOK kept empty list nothing.
  assert.deepEqual((await answer('/rest/tcp_bus/nosuch')).errors, { Exception: "Circuit or alias with name 'nosuch' not defined!" });
  const empty = await fetch(`${gate.baseUrl}/rest/serial_bus/all`);
  assert.equal(empty.status, 200);
  assert.equal(await empty.text(), '[]');
});

test('a /json body that is not an object: ValidationError under a type name with a schema, TypeError without', async () => {
  const validated = await answer('/json/do/1_01', json([1]));
  assert.equal(validated.status, 400);
  assert.deepEqual(validated.errors, { ValidationError: "[1] is not of type 'object'" });
  const unchecked = await answer('/json/ro/2_01', json([1]));
  assert.equal(unchecked.status, 400);
  assert.deepEqual(Object.keys(unchecked.errors), ['TypeError']);
});

test('relay writes are checked with the DO schema, ro writes are not', async () => {
  const relay = await answer('/rest/relay/2_01', form('foo=1'));
  assert.equal(relay.status, 400);
  assert.deepEqual(relay.errors, { ValidationError: "Additional properties are not allowed ('foo' was unexpected)" });
  // A field the DO schema takes and a relay does not reaches the relay, which refuses it as set() did.
  const timeout = await answer('/rest/relay/2_01', form('value=1&timeout=5'));
  assert.deepEqual(Object.keys(timeout.errors), ['TypeError']);
  assert.equal(((await (await fetch(`${gate.baseUrl}/rest/ro/2_01`)).json()) as { value: number }).value, 0, 'nothing written');
});

test('an alias of another type: KeyError naming a canonical type, Exception under an alternate name', async () => {
  const aliased = await fetch(`${gate.baseUrl}/json/do/1_03`, json({ alias: 'pump' }));
  assert.equal(aliased.status, 200);
  const canonical = await answer('/rest/di/pump');
  assert.equal(canonical.status, 404);
  assert.deepEqual(canonical.errors, { KeyError: "'di'" });
  assert.deepEqual((await answer('/rest/input/pump')).errors, { Exception: "Invalid device circuit 'pump' with devtype 'input'" });
  assert.equal((await fetch(`${gate.baseUrl}/rest/output/pump`)).status, 200);
});
