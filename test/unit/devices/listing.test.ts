import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Device } from '../../../src/devices/device.js';
import { startDaemon, type TestDaemon } from '../../helpers/daemon.js';
import { get, list, postForm, postJson, waitFor } from '../../helpers/http.js';
import { assertShape } from '../../helpers/shape.js';

// modbus_slave, device_info and the listings (/rest/all, /json/all,
// /rest/{dev}/all, /rest/{dev}/all/{prop}, property reads).

const YAML = `
comm_channels:
  SIM:
    type: SIMULATOR
    toggle_ms: 0
    timeout: 50
    device_info:
      family: Neuron
      model: M103
      sn: 1234
      board_count: 2
    devices:
      1:
        model: '00'
        slave-id: 1
        scan_frequency: 100
      2:
        model: '01'
        slave-id: 2
        scan_frequency: 100
  LAB:
    type: SIMULATOR
    toggle_ms: 0
    devices:
      x:
        model: 'xS51'
        slave-id: 3
        device_info:
          family: Extension
          sn: 77
`;

let daemon: TestDaemon;
const url = (path: string) => daemon.baseUrl + path;

before(async () => {
  daemon = await startDaemon(YAML);
});
after(() => daemon.stop());

const SLAVE_SHAPE = {
  dev: 'string',
  circuit: 'string',
  last_comm: ['number', 'null'],
  slave_id: 'number',
  modbus_type: 'string',
  modbus_spec: 'string',
  scan_interval: 'number',
  online: 'boolean',
  state: 'string',
  success_ratio: 'number',
  stale_s: ['number', 'null'],
  model: 'string',
  product: ['string', 'null'],
  stats: 'object',
} as const;

describe('modbus_slave', () => {
  test('GET has EVOK fields, then online and stats', async () => {
    const { status, body } = await get(url('/rest/modbus_slave/1'));
    assert.equal(status, 200);
    assertShape(body, SLAVE_SHAPE);
    assert.equal(body.slave_id, 1);
    assert.equal(body.scan_interval, 0.01);
    assert.equal(body.online, true);
    assert.equal(body.state, 'online');
    assert.equal(body.success_ratio, 1);
    assertShape(body.stats, { requests: 'number', timeouts: 'number', errors: 'number', last_scan_ms: 'number' });
  });

  test('is fresh on every read, also inside /rest/all', async () => {
    const first = (await get(url('/rest/modbus_slave/1'))).body.stats?.requests;
    await waitFor(async () => (await get(url('/rest/modbus_slave/1'))).body.stats?.requests !== first);
    const inAll = () => get(url('/rest/all')).then(({ body }) => list(body).find((device) => String(device.dev) === 'modbus_slave' && String(device.circuit) === '1'));
    const before = (await inAll())?.stats?.requests;
    await waitFor(async () => (await inAll())?.stats?.requests !== before);
  });

  test('is pushed on the change feed when its slave goes offline and back', async () => {
    const pushed: Device[] = [];
    const unsubscribe = daemon.runtime.feed.subscribe((devices) => pushed.push(...devices.filter((device) => device.type === 'modbus_slave')));
    const boards = daemon.runtime.simulations.get('SIM')!.boards;
    const board = boards.get(2)!;
    boards.delete(2);
    await waitFor(() => pushed.length > 0);
    const { body } = await get(url('/rest/modbus_slave/2'));
    assert.equal(body.online, false, 'readable while offline');
    assert.equal(body.state, 'offline');
    assert.ok(Number(body.stats?.timeouts) > 0);
    assert.equal((await get(url('/rest/ro/2_01'))).status, 503, 'its devices are not');
    boards.set(2, board);
    await waitFor(() => pushed.length > 1, 10_000);
    assert.equal((await get(url('/rest/modbus_slave/2'))).body.online, true);
    unsubscribe();
    assert.ok(pushed.every((device) => device.circuit === '2'));
  });

  test('cannot be written or aliased', async () => {
    assert.equal((await postForm(url('/rest/modbus_slave/1'), { print_log: '1' })).status, 400);
    assert.equal((await postJson(url('/json/modbus_slave/1'), { alias: 'main' })).status, 400);
  });
});

describe('device_info', () => {
  test('bus-level entry is named by its model, per-device entry by the device', async () => {
    const bus = await get(url('/rest/device_info/M103'));
    assert.equal(bus.status, 200);
    assertShape(bus.body, { dev: 'string', family: 'string', model: 'string', sn: ['number', 'null'], board_count: 'number', circuit: 'string' });
    assert.deepEqual(bus.body, { dev: 'device_info', family: 'Neuron', model: 'M103', sn: 1234, board_count: 2, circuit: 'M103' });
    const device = await get(url('/rest/device_info/x'));
    assert.equal(device.body.circuit, 'x');
    assert.equal(device.body.family, 'Extension');
    assert.equal(device.body.sn, 77);
  });

  test('is read-only', async () => {
    assert.equal((await postForm(url('/rest/device_info/M103'), { sn: '1' })).status, 400);
    assert.equal((await postForm(url('/rest/device_info/M103'), { alias: 'me' })).status, 400);
  });
});

describe('listings', () => {
  const ORDER = ['di', 'ro', 'do', 'ai', 'ao', 'led', 'wd', 'modbus_slave', 'owpower', 'register', 'device_info'];

  test('/rest/all and /json/all list every device in EVOK type order', async () => {
    const rest = list((await get(url('/rest/all'))).body);
    const json = list((await get(url('/json/all'))).body);
    assert.equal(rest.length, json.length);
    const types = rest.map((device) => String(device.dev));
    const firstSeen = [...new Set(types)];
    assert.deepEqual(firstSeen, ORDER);
    for (let i = 1; i < types.length; i++) assert.ok(ORDER.indexOf(types[i]!) >= ORDER.indexOf(types[i - 1]!), 'grouped by type');
    assert.ok(!types.includes('run') && !types.includes('nv_save'));
  });

  test('/rest/{dev}/all by canonical and alternate names', async () => {
    const relays = list((await get(url('/rest/relay/all'))).body);
    assert.equal(relays.length, 8 + 5);
    assert.ok(relays.every((device) => String(device.dev) === 'ro'));
    assert.deepEqual(list((await get(url('/rest/run/all'))).body).map((device) => device.circuit), ['alias']);
    assert.equal(list((await get(url('/rest/nv_save/all'))).body).length, 3);
  });

  test('/rest/{dev}/all/{prop} gives circuit and that field', async () => {
    const values = list((await get(url('/rest/wd/all/timeout'))).body);
    assert.equal(values.length, 3);
    for (const item of values) assert.deepEqual(Object.keys(item), ['circuit', 'timeout']);
  });

  test('property reads are limited to the documented fields', async () => {
    assert.deepEqual((await get(url('/rest/ai/1_01/unit'))).body, { unit: 'V' });
    assert.deepEqual((await get(url('/rest/modbus_slave/1/slave_id'))).body, { slave_id: 1 });
    for (const path of ['/rest/ro/2_01/val_reg', '/rest/ro/2_01/_feature', '/rest/wd/1_01/slave']) {
      assert.equal((await get(url(path))).status, 404, path);
    }
  });
});
