import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { postBody } from '../../helpers/post-body.js';
import { spawnDaemon, type SpawnedDaemon } from '../../helpers/spawn-daemon.js';

// POST /bulk against the built daemon with its built-in simulated board.

let daemon: SpawnedDaemon;
const bulk = (body: unknown) => postBody(`${daemon.baseUrl}/bulk`, body);
const circuits = (devices: Array<{ circuit: string }>) => devices.map((device) => device.circuit);

before(async () => {
  daemon = await spawnDaemon([]);
});

after(async () => {
  await daemon.stop();
});

describe('group_queries (always failed in EVOK)', () => {
  test('types by canonical or alternate name, in /rest/all order', async () => {
    const { status, body } = await bulk({ group_queries: [{ device_types: ['output', 'input'] }] });
    assert.equal(status, 200);
    const [devices] = body.group_queries;
    assert.deepEqual(devices.map((d: { dev: string }) => d.dev), ['di', 'di', 'di', 'di', 'do', 'do', 'do', 'do']);
    assert.equal(devices[0].debounce, 50, 'full device objects');
  });

  test('circuits, aliases, group and global_device_id narrow the selection', async () => {
    await postBody(`${daemon.baseUrl}/json/di/1_04`, { alias: 'doorbell' });
    const { body } = await bulk({
      group_queries: [
        { device_types: ['di'], device_circuits: ['1_02', 'doorbell'] },
        { device_types: ['do'], group: 1 },
        { device_types: ['do'], group: 2 },
        { device_types: ['di'], global_device_id: 1, device_circuits: ['1_01'] },
        { device_types: ['di'], global_device_id: 7 },
      ],
    });
    const [byCircuit, group1, group2, byGlobal, noGlobal] = body.group_queries;
    assert.deepEqual(circuits(byCircuit), ['1_02', '1_04']);
    assert.deepEqual(circuits(group1), ['1_01', '1_02', '1_03', '1_04']);
    assert.deepEqual(group2, []);
    assert.deepEqual(circuits(byGlobal), ['1_01']);
    assert.deepEqual(noGlobal, []);
  });
});

describe('assignments', () => {
  test('group_assignments write every selected device and answer their confirmed states', async () => {
    const { body } = await bulk({
      group_assignments: [{ device_type: 'do', device_circuits: ['1_01', '1_02'], assigned_values: { value: 1 } }],
    });
    const [written] = body.group_assignments;
    assert.deepEqual(written.map((d: { circuit: string; value: number }) => [d.circuit, d.value]), [['1_01', 1], ['1_02', 1]]);
    const { body: check } = await bulk({ group_queries: [{ device_types: ['do'], device_circuits: ['1_01', '1_02'] }] });
    assert.deepEqual(check.group_queries[0].map((d: { value: number }) => d.value), [1, 1]);
  });

  test('individual_assignments answer confirmed states (EVOK: the state before the write)', async () => {
    const { status, body } = await bulk({
      individual_assignments: [
        { device_type: 'do', device_circuit: '1_03', assigned_values: { value: 1 } },
        { device_type: 'digitaloutput', device_circuit: '1_03', assigned_values: { value: 0 } },
      ],
    });
    assert.equal(status, 200);
    assert.deepEqual(body.individual_assignments.map((d: { value: number }) => d.value), [1, 0]);
  });

  test('a failing item becomes an error envelope in its place; the others still run', async () => {
    const { status, body } = await bulk({
      group_queries: [{ device_types: ['foo'] }, { device_types: ['di'], device_circuits: ['1_01'] }],
      group_assignments: [{ device_type: 'do', device_circuits: ['1_04'], assigned_values: { value: 'nine' } }],
      individual_assignments: [
        { device_type: 'do', device_circuit: '9_99', assigned_values: { value: 1 } },
        { device_type: 'do', device_circuit: '1_04', assigned_values: { value: 1 } },
        { device_type: 'di', device_circuit: '1_01', assigned_values: { value: 1 } },
        { device_type: 'do', device_circuit: '1_04' },
      ],
    });
    assert.equal(status, 200);
    assert.deepEqual(body.group_queries[0], { success: false, errors: { KeyError: "'foo'" } });
    assert.deepEqual(circuits(body.group_queries[1]), ['1_01']);
    assert.equal(body.group_assignments[0][0].success, false);
    assert.ok(body.group_assignments[0][0].errors.ValueError);
    const [unknown, ok, readOnly, noValues] = body.individual_assignments;
    assert.ok(unknown.errors.Exception);
    assert.equal(ok.value, 1);
    assert.ok(readOnly.errors.ValidationError);
    assert.ok(noValues.errors.TypeError);
  });

  test('a group assignment without a type is refused rather than writing everything', async () => {
    const { body } = await bulk({ group_assignments: [{ assigned_values: { value: 1 } }] });
    assert.equal(body.group_assignments[0].success, false);
  });
});

describe('the request itself', () => {
  test('empty object answers {}', async () => {
    assert.deepEqual((await bulk({})).body, {});
  });

  const bad: Array<[string, unknown]> = [
    ['malformed JSON', '{"group_queries": ['],
    ['not an object', '[1]'],
    ['a section that is not a list of objects', { group_queries: {} }],
    ['an unknown section', { group_query: [] }],
  ];
  for (const [name, body] of bad) {
    test(`${name} → 400 envelope`, async () => {
      const reply = await bulk(body);
      assert.equal(reply.status, 400);
      assert.equal(reply.body.success, false);
      assert.equal(Object.keys(reply.body.errors).length, 1);
    });
  }

  test('GET → 405; OPTIONS → 204 with CORS; trailing slash works', async () => {
    assert.equal((await fetch(`${daemon.baseUrl}/bulk`)).status, 405);
    const options = await fetch(`${daemon.baseUrl}/bulk/`, { method: 'OPTIONS' });
    assert.equal(options.status, 204);
    assert.equal(options.headers.get('access-control-allow-origin'), '*');
    assert.deepEqual((await postBody(`${daemon.baseUrl}/bulk/`, {})).body, {});
  });
});
