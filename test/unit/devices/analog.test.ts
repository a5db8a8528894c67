import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { float32, float32Words } from '../../../src/devices/digital/bits.js';
import { simulatorYaml, startDaemon, type TestDaemon } from '../../helpers/daemon.js';
import { get, postForm, postJson, waitFor } from '../../helpers/http.js';
import { assertShape } from '../../helpers/shape.js';

// Analog inputs and outputs on a Brain section (1, model 00: AI float32 +
// BAO) and an E-4AI4AO section (2, model 0F: multi-mode AI + 12-bit AO).

let daemon: TestDaemon;
const url = (path: string) => daemon.baseUrl + path;
const brain = () => daemon.board('SIM', 1);
const extension = () => daemon.board('SIM', 2);

function setFloat(board: ReturnType<typeof brain>, address: number, value: number): void {
  const [low, high] = float32Words(value, true);
  board.set('holding', address, low);
  board.set('holding', address + 1, high);
}

before(async () => {
  daemon = await startDaemon(simulatorYaml({ 1: '00', 2: '0F' }));
});
after(() => daemon.stop());

const AI_SHAPE = {
  dev: 'string',
  circuit: 'string',
  value: ['number', 'null'],
  unit: ['string', 'null'],
  mode: ['string', 'null'],
  modes: 'object',
  range: ['array', 'null'],
} as const;

describe('ai', () => {
  test('GET has EVOK fields; the value is the float32 of its registers, low word first', async () => {
    setFloat(brain(), 3002, 4.25);
    await waitFor(async () => Number((await get(url('/rest/ai/1_01'))).body.value) === 4.25);
    const { body } = await get(url('/rest/analoginput/1_01'));
    assertShape(body, AI_SHAPE);
    assert.equal(body.mode, 'Voltage');
    assert.equal(body.unit, 'V');
    assert.deepEqual(body.range, [0, 10]);
    assert.deepEqual(Object.keys(body.modes ?? {}), ['Voltage', 'Current']);
  });

  test('mode write sets the mode register; unit and range follow', async () => {
    const { status, body } = await postForm(url('/rest/ai/2_02'), { mode: 'Current' });
    assert.equal(status, 200);
    assert.equal(body.result?.mode, 'Current');
    assert.equal(body.result?.unit, 'mA');
    assert.deepEqual(body.result?.range, [0, 20]);
    assert.equal(extension().get('holding', 1020), 3);
  });

  test('a non-finite reading is null, not a bare NaN', async () => {
    extension().set('holding', 8, 0);
    extension().set('holding', 9, 0x7fc0);
    await waitFor(async () => (await get(url('/rest/ai/2_02'))).body.value === null);
  });

  test('unknown or unselectable mode and value writes are 400 and write nothing', async () => {
    const before = extension().get('holding', 1019);
    for (const fields of [{ mode: 'Bogus' }, { value: '3' }, { mode: 'Voltage', unit: 'V' }] as Record<string, string>[]) {
      assert.equal((await postForm(url('/rest/ai/2_01'), fields)).status, 400, JSON.stringify(fields));
    }
    assert.equal(extension().get('holding', 1019), before);
  });
});

describe('ao (extension, 12-bit)', () => {
  test('GET has EVOK fields', async () => {
    const { body } = await get(url('/rest/ao/2_01'));
    assertShape(body, {
      dev: 'string',
      circuit: 'string',
      mode: 'string',
      modes: 'object',
      value: 'number',
      unit: 'string',
      range: 'array',
    });
    assert.equal(body.mode, 'Voltage');
  });

  test('value write goes to the DAC register at 2.5 mV per step and reads back the same', async () => {
    const { body } = await postForm(url('/rest/ao/2_02'), { value: '1.5' });
    assert.equal(body.result?.value, 1.5);
    assert.equal(extension().get('holding', 3), 600);
    const above = await postJson(url('/json/analogoutput/2_02'), { value: 12 });
    assert.equal(above.status, 400, 'outside the advertised 0..10 V, refused rather than clamped');
    assert.equal(extension().get('holding', 3), 600);
  });

  test('negative or non-numeric values are 400', async () => {
    const before = extension().get('holding', 3);
    assert.equal((await postForm(url('/rest/ao/2_02'), { value: '-1' })).status, 400);
    assert.equal((await postJson(url('/json/ao/2_02'), { value: 'x' })).status, 400);
    assert.equal((await postJson(url('/json/ao/2_02'), { value: 1, frequency: 5 })).status, 400);
    assert.equal(extension().get('holding', 3), before);
  });
});

describe('ao (Brain, float32 with modes)', () => {
  test('GET has EVOK fields (no range)', async () => {
    const { body } = await get(url('/rest/ao/1_01'));
    assertShape(body, { dev: 'string', circuit: 'string', mode: 'string', modes: 'object', unit: 'string', value: 'number' });
    assert.deepEqual(body.modes, {
      Voltage: { value: 0, unit: 'V', range: [0, 10] },
      Current: { value: 1, unit: 'mA', range: [0, 20] },
      Resistance: { value: 2, unit: 'Ohm', range: [0, 2000] },
    });
  });

  test('value write sends a float32, low word first', async () => {
    const { body } = await postForm(url('/rest/ao/1_01'), { value: '2.5' });
    assert.equal(body.result?.value, 2.5);
    assert.equal(float32([brain().get('holding', 3000), brain().get('holding', 3001)], true), 2.5);
  });

  test('Resistance writes the advertised 2 (EVOK wrote 3) and shows the measured resistance', async () => {
    setFloat(brain(), 3004, 1234.5);
    const { body } = await postForm(url('/rest/ao/1_01'), { mode: 'Resistance' });
    assert.equal(brain().get('holding', 1019), 2);
    assert.equal(body.result?.mode, 'Resistance');
    assert.equal(body.result?.unit, 'Ohm');
    await waitFor(async () => Number((await get(url('/rest/ao/1_01'))).body.value) === 1234.5);
  });

  test('switching to Current keeps the set point', async () => {
    const { body } = await postJson(url('/json/ao/1_01'), { mode: 'Current' });
    assert.equal(brain().get('holding', 1019), 1);
    assert.equal(body.result?.value, 2.5);
    assert.equal(body.result?.unit, 'mA');
  });

  test('unknown mode is 400', async () => {
    assert.equal((await postForm(url('/rest/ao/1_01'), { mode: 'Power' })).status, 400);
    assert.equal(brain().get('holding', 1019), 1);
  });
});
