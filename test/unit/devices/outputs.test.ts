import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { simulatorYaml, startDaemon, type TestDaemon } from '../../helpers/daemon.js';
import { get, list, postForm, postJson } from '../../helpers/http.js';
import { assertShape } from '../../helpers/shape.js';

// Relays, LEDs, the master watchdog and the coil actions (owpower, nv_save),
// on a Brain section (1, model 00), an 8DI8RO section (2, model 01) and a
// 28-relay section (3, model 07) of one simulated controller.

let daemon: TestDaemon;
const url = (path: string) => daemon.baseUrl + path;
const brain = () => daemon.board('SIM', 1);
const relays = () => daemon.board('SIM', 2);

before(async () => {
  daemon = await startDaemon(simulatorYaml({ 1: '00', 2: '01', 3: '07' }));
});
after(() => daemon.stop());

describe('ro', () => {
  test('GET has EVOK fields', async () => {
    const { status, body } = await get(url('/rest/ro/2_01'));
    assert.equal(status, 200);
    assertShape(body, { dev: 'string', circuit: 'string', value: 'number' });
    assert.equal(body.dev, 'ro');
    assert.equal(body.circuit, '2_01');
  });

  test('form write switches the relay; the reply shows the confirmed state', async () => {
    const { status, body } = await postForm(url('/rest/relay/2_03'), { value: '1' });
    assert.equal(status, 200);
    assert.equal(body.success, true);
    assert.equal(body.result?.value, 1);
    assert.equal((relays().get('holding', 1) >> 2) & 1, 1);
    await postJson(url('/json/ro/2_03'), { value: false });
    assert.equal((relays().get('holding', 1) >> 2) & 1, 0);
  });

  test('invalid writes are 400 and switch nothing', async () => {
    const before = relays().get('holding', 1);
    for (const fields of [{ value: '1.5' }, { value: 'on' }, { value: '1', timeout: '5' }, { mode: 'PWM' }] as Record<string, string>[]) {
      const { status, body } = await postForm(url('/rest/ro/2_04'), fields);
      assert.equal(status, 400, JSON.stringify(fields));
      assert.equal(body.success, false);
    }
    assert.equal(relays().get('holding', 1), before);
  });

  test('board 07 numbers its second relay group on from 17 (EVOK#195)', async () => {
    const circuits = list((await get(url('/rest/ro/all'))).body)
      .map((device) => device.circuit)
      .filter((circuit) => String(circuit).startsWith('3_'));
    assert.equal(circuits.length, 28);
    assert.equal(circuits[0], '3_01');
    assert.equal(circuits[16], '3_17');
    assert.equal(circuits[27], '3_28');
    await postForm(url('/rest/ro/3_17'), { value: '1' });
    assert.equal(daemon.board('SIM', 3).get('holding', 1) & 1, 1, 'relay 17 is bit 0 of the second value register');
  });
});

describe('led', () => {
  test('GET has EVOK fields and a write lights the LED', async () => {
    assertShape((await get(url('/rest/led/1_02'))).body, { dev: 'string', circuit: 'string', value: 'number' });
    const { body } = await postForm(url('/rest/led/1_02'), { value: '1' });
    assert.equal(body.result?.value, 1);
    assert.equal((brain().get('holding', 20) >> 1) & 1, 1);
  });
});

describe('watchdog', () => {
  test('GET has EVOK fields under both type names', async () => {
    for (const type of ['watchdog', 'wd']) {
      const { status, body } = await get(url(`/rest/${type}/1_01`));
      assert.equal(status, 200);
      assertShape(body, { dev: 'string', circuit: 'string', value: 'number', timeout: 'number', was_wd_reset: 'number', nv_save: 'number' });
      assert.equal(body.dev, 'wd');
      assert.equal(body.timeout, 5000, 'firmware default');
    }
  });

  test('value and timeout are written to their registers', async () => {
    const { body } = await postForm(url('/rest/wd/1_01'), { value: '1', timeout: '3000' });
    assert.equal(body.result?.value, 1);
    assert.equal(body.result?.timeout, 3000);
    assert.equal(brain().get('holding', 6), 1);
    assert.equal(brain().get('holding', 1008), 3000);
  });

  test('reset=0 and nv_save=0 do nothing (EVOK B4); 1 does it', async () => {
    const actions = brain().actions.length;
    await postForm(url('/rest/wd/1_01'), { reset: '0', nv_save: '0' });
    await postJson(url('/json/wd/1_01'), { reset: 0 });
    assert.equal(brain().actions.length, actions);
    const { body } = await postForm(url('/rest/wd/1_01'), { nv_save: '1' });
    assert.equal(body.result?.nv_save, 1);
    await postForm(url('/rest/wd/1_01'), { reset: '1' });
    assert.deepEqual(brain().actions.slice(actions), ['nv_save', 'wd_reset']);
  });

  test('out of range timeout is 400 and writes nothing', async () => {
    const before = brain().get('holding', 1008);
    const { status } = await postForm(url('/rest/wd/1_01'), { timeout: '70000', value: '0' });
    assert.equal(status, 400);
    assert.equal(brain().get('holding', 1008), before);
  });
});

describe('owpower and nv_save', () => {
  test('GET shapes; owpower is listed in /rest/all, nv_save is not', async () => {
    for (const type of ['owpower', 'nv_save']) {
      const { status, body } = await get(url(`/rest/${type}/1`));
      assert.equal(status, 200);
      assertShape(body, { dev: 'string', circuit: 'string', value: 'number' });
      assert.equal(body.dev, type);
    }
    const types = new Set<unknown>(list((await get(url('/rest/all'))).body).map((device) => device.dev));
    assert.ok(types.has('owpower'));
    assert.ok(!types.has('nv_save'));
  });

  test('writes pulse their coils and are remembered', async () => {
    const actions = brain().actions.length;
    const owpower = await postForm(url('/rest/owpower/1'), { value: '1' });
    assert.equal(owpower.body.result?.value, 1);
    const nvSave = await postJson(url('/json/nv_save/1'), { value: 1 });
    assert.equal(nvSave.body.result?.value, 1);
    assert.deepEqual(brain().actions.slice(actions), ['owpower', 'nv_save']);
    assert.equal((await get(url('/rest/nv_save/1'))).body.value, 1);
  });

  test('invalid value is 400 without a pulse', async () => {
    const actions = brain().actions.length;
    assert.equal((await postForm(url('/rest/owpower/1'), { value: 'x' })).status, 400);
    assert.equal(brain().actions.length, actions);
  });
});
