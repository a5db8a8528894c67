import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { float32Words } from '../../../src/devices/digital/bits.js';
import { simulatorYaml, startDaemon, type TestDaemon } from '../../helpers/daemon.js';
import { get, postForm, postJson, waitFor } from '../../helpers/http.js';
import { assertShape } from '../../helpers/shape.js';
import { tempDir } from '../../helpers/temp-dir.js';

// Raw registers and data points: an xG18 1-Wire gateway (signed16 × 0.01 with
// a validity mask), an IAQ sensor (float32 input registers, high word first)
// and a user hw-definition with input registers, unsigned16 and scaling.

const PROBE_DEFINITION = `
modbus_register_blocks:
  - { start_reg: 0, count: 4, frequency: 1, type: input }
  - { start_reg: 20, count: 4, frequency: 1 }
modbus_features:
  - { type: REGISTER, count: 2, start_reg: 0, reg_type: input }
  - { type: REGISTER, count: 4, start_reg: 20 }
  - { type: DATA_POINT, value_reg: 2, datatype: unsigned16, factor: 0.1, offset: -10, reg_type: input }
  - { type: DATA_POINT, value_reg: 22, datatype: float32, name: flow, unit: m3/h }
`;

let daemon: TestDaemon;
const url = (path: string) => daemon.baseUrl + path;
const gateway = () => daemon.board('SIM', 1);
const iaq = () => daemon.board('SIM', 2);
const probe = () => daemon.board('SIM', 3);

before(async () => {
  const dir = tempDir('iogate-registers-');
  mkdirSync(join(dir, 'hw_definitions'));
  writeFileSync(join(dir, 'hw_definitions', 'PROBE.yaml'), PROBE_DEFINITION);
  daemon = await startDaemon(simulatorYaml({ T: 'xG18', IAQ: 'IAQ-TH', P: 'PROBE' }), dir);
});
after(() => daemon.stop());

async function valueOf(path: string): Promise<unknown> {
  return (await get(url(path))).body.value;
}

describe('register', () => {
  test('GET has EVOK fields for holding and input registers', async () => {
    probe().set('input', 1, 4321);
    await waitFor(async () => (await valueOf('/rest/register/P_1_inp')) === 4321);
    for (const circuit of ['P_20', 'P_1_inp']) {
      const { status, body } = await get(url(`/rest/register/${circuit}`));
      assert.equal(status, 200);
      assertShape(body, { dev: 'string', circuit: 'string', value: 'number' });
      assert.equal(body.circuit, circuit);
    }
  });

  test('form writes work (EVOK B3) and JSON too', async () => {
    const { status, body } = await postForm(url('/rest/register/P_21'), { value: '1234' });
    assert.equal(status, 200);
    assert.equal(body.result?.value, 1234);
    assert.equal(probe().get('holding', 21), 1234);
    await postJson(url('/json/register/P_21'), { value: 65535 });
    assert.equal(probe().get('holding', 21), 65535);
  });

  test('out of range, non-integer and input-register writes are 400 and write nothing', async () => {
    for (const value of ['65536', '-1', '1.5', 'abc']) {
      assert.equal((await postForm(url('/rest/register/P_20'), { value })).status, 400, value);
    }
    assert.equal((await postForm(url('/rest/register/P_1_inp'), { value: '7' })).status, 400);
    assert.equal(probe().get('holding', 20), 0);
    assert.equal(probe().get('holding', 1), 0, 'no holding register written for an input circuit');
  });
});

describe('data_point', () => {
  test('signed16 is sign-extended (EVOK B7), scaled, with its validity bit', async () => {
    gateway().set('holding', 3, 0xfe0c); // −500 × 0.01
    gateway().set('holding', 9, 0b11111011); // channel 3 (bit 2) invalid
    await waitFor(async () => (await valueOf('/rest/data_point/T_3')) === -5);
    const { body } = await get(url('/rest/data_point/T_3'));
    assertShape(body, { dev: 'string', circuit: 'string', value: 'number', name: 'string', valid: 'boolean', unit: 'string' });
    assert.deepEqual(body, { dev: 'data_point', circuit: 'T_3', value: -5, name: 'temperature', valid: false, unit: '°C' });
    assert.equal((await get(url('/rest/data_point/T_1'))).body.valid, true);
  });

  test('factor 0.01 gives clean decimals', async () => {
    gateway().set('holding', 4, 2140);
    await waitFor(async () => (await valueOf('/rest/data_point/T_4')) === 21.4);
  });

  test('float32 in input registers, high word first', async () => {
    const [high, low] = float32Words(22.5, false);
    iaq().set('input', 0, high);
    iaq().set('input', 1, low);
    await waitFor(async () => (await valueOf('/rest/data_point/IAQ_0')) === 22.5);
    assert.equal((await get(url('/rest/data_point/IAQ_0'))).body.unit, '°C');
  });

  test('unsigned16 with factor and offset; fields absent when not configured', async () => {
    probe().set('input', 2, 40000);
    await waitFor(async () => (await valueOf('/rest/data_point/P_2')) === 3990);
    assertShape((await get(url('/rest/data_point/P_2'))).body, { dev: 'string', circuit: 'string', value: 'number' });
    const [high, low] = float32Words(1.25, false);
    probe().set('holding', 22, high);
    probe().set('holding', 23, low);
    await waitFor(async () => (await valueOf('/rest/data_point/P_22')) === 1.25);
    assertShape((await get(url('/rest/data_point/P_22'))).body, { dev: 'string', circuit: 'string', value: 'number', name: 'string', unit: 'string' });
  });

  test('scaled by a fraction or read as float32, the value is written as a float, as EVOK (Python) does', async () => {
    const text = async (path: string) => (await fetch(url(path))).text();
    gateway().set('holding', 3, 0xfe0c);
    await waitFor(async () => (await valueOf('/rest/data_point/T_3')) === -5);
    assert.match(await text('/rest/data_point/T_3'), /"value":-5\.0,/);
    probe().set('input', 2, 40000);
    await waitFor(async () => (await valueOf('/rest/data_point/P_2')) === 3990);
    assert.match(await text('/rest/data_point/P_2'), /"value":3990\.0\}/);
    const [high, low] = float32Words(2, false);
    probe().set('holding', 22, high);
    probe().set('holding', 23, low);
    await waitFor(async () => (await valueOf('/rest/data_point/P_22')) === 2);
    assert.match(await text('/rest/data_point/P_22'), /"value":2\.0,/);
  });

  test('read-only: an alias can be written, anything else is 400 and changes nothing', async () => {
    const rejected = await postJson(url('/json/data_point/T_5'), { value: 3, alias: 'cellar' });
    assert.equal(rejected.status, 400);
    assert.equal((await get(url('/rest/data_point/T_5'))).body.alias, undefined);
    const accepted = await postForm(url('/rest/data_point/T_5'), { alias: 'cellar' });
    assert.equal(accepted.status, 200);
    assert.equal(accepted.body.result?.alias, 'cellar');
    assert.equal((await get(url('/rest/data_point/cellar'))).body.circuit, 'T_5');
  });
});
