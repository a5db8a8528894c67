import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { TrendStore } from '../../../src/trends/trend-store.js';
import { startGate, type Gate } from '../../helpers/in-process.js';

// The trend rings: one sample per step of every analog and 1-Wire value, at
// most span/step samples each, oldest first, with the time of the first.

let gate: Gate;
before(async () => {
  gate = await startGate(`
apis:
  websocket:
    enabled: false
comm_channels:
  SIM:
    type: SIMULATOR
    toggle_ms: 0
    devices:
      1:
        model: "00"
  OWBUS:
    type: OWFS
    simulate: [28, 26, 12]
`);
});
after(() => gate.close());

test('each value keeps its last span/step samples; a write shows in the next sample', async () => {
  let now = 1_800_000_000_000;
  const store = new TrendStore(gate.runtime.registry, { stepS: 10, spanS: 50, now: () => now });
  for (let i = 0; i < 3; i++) {
    store.sample();
    now += 10_000;
  }
  const written = await fetch(`${gate.baseUrl}/json/ao/1_01`, { method: 'POST', body: JSON.stringify({ value: 2.5 }) });
  assert.equal(written.status, 200);
  for (let i = 0; i < 4; i++) {
    store.sample();
    now += 10_000;
  }
  const series = store.series();
  // ai, ao, a thermometer, and temp/humidity/vad/vdd of the DS2438; no PIO chip.
  assert.deepEqual(series.map((one) => `${one.dev} ${one.field}`).sort(), ['1wdevice humidity', '1wdevice temp', '1wdevice vad', '1wdevice vdd', 'ai value', 'ao value', 'temp value']);
  const ao = series.find((one) => one.dev === 'ao')!;
  assert.deepEqual(ao.values, [0, 2.5, 2.5, 2.5, 2.5], 'seven samples taken, the last five kept');
  assert.equal(ao.unit, 'V');
  const lastSample = (now - 10_000) / 1000;
  assert.equal(ao.start, lastSample - 40);
  assert.equal(series.find((one) => one.field === 'humidity')!.unit, '%RH');
  assert.equal(series.find((one) => one.dev === 'temp')!.unit, '°C');
  // Bounded: five float32 samples per value, whatever the number of samples taken.
  assert.equal(store.sampleBytes(), series.length * 5 * 4);
  const reply = JSON.parse(store.json());
  assert.equal(reply.step_s, 10);
  assert.equal(reply.span_s, 50);
  assert.equal(reply.series.length, series.length);
});

test('a value with nothing to read is null', async () => {
  const store = new TrendStore(gate.runtime.registry, { stepS: 1, spanS: 3 });
  store.sample();
  const thermometer = [...gate.runtime.registry.list('sensor')].find((device) => device.full()['dev'] === 'temp')!;
  const wasLost = (thermometer as unknown as { lost: boolean }).lost;
  (thermometer as unknown as { lost: boolean }).lost = true;
  thermometer.refresh();
  try {
    store.sample();
    const series = store.series().find((one) => one.circuit === thermometer.circuit)!;
    assert.equal(series.values.length, 2);
    assert.equal(typeof series.values[0], 'number');
    assert.equal(series.values[1], null);
  } finally {
    (thermometer as unknown as { lost: boolean }).lost = wasLost;
    thermometer.refresh();
  }
});
