import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Device } from '../../../src/devices/device.js';
import { startGate, type Gate } from '../../helpers/in-process.js';
import { connect, deviceIn } from '../../helpers/ws-client.js';

// EVOK pushes readings, not settings: changing an alias, a DI's debounce or a
// watchdog's timeout sends no event to WebSocket clients (EVOK's scan emits an
// event only when a value, counter, mode or PWM changed). MQTT, which mirrors
// every state, still gets them.

let gate: Gate;

before(async () => {
  gate = await startGate();
});

after(async () => {
  await gate.close();
});

async function post(path: string, body: Record<string, unknown>): Promise<Record<string, unknown>> {
  const response = await fetch(`${gate.baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  assert.equal(response.status, 200, `${path} ${JSON.stringify(body)}`);
  return ((await response.json()) as { result: Record<string, unknown> }).result;
}

test('settings writes push nothing over the WebSocket; the next reading does, with them in it', async () => {
  const client = await connect(gate.wsUrl);
  const mirrored: string[] = [];
  const unsubscribe = gate.runtime.feed.subscribe((devices: readonly Device[]) => {
    // The raw registers behind them are mirrored too; this test follows the devices written.
    for (const device of devices) if (device.type !== 'register') mirrored.push(`${device.type} ${device.circuit}`);
  }, { includeSilent: true });
  try {
    const settings: Array<[string, Record<string, unknown>]> = [
      ['/json/do/1_01', { alias: 'pump' }],
      ['/json/di/1_02', { debounce: 70 }],
      ['/json/di/1_02', { alias: 'door' }],
      ['/json/wd/1_01', { timeout: 3000 }],
      ['/json/do/1_01', { alias: '' }],
    ];
    for (const [path, body] of settings) {
      const result = await post(path, body);
      for (const [field, value] of Object.entries(body)) if (value !== '') assert.equal(result[field], value, 'the reply shows the setting');
    }
    // A reading after them: its push is the first message the client gets.
    const current = ((await (await fetch(`${gate.baseUrl}/rest/do/1_02`)).json()) as { value: number }).value;
    await post('/json/do/1_02', { value: current ? 0 : 1 });
    const first = await client.next();
    assert.ok(Array.isArray(first));
    assert.deepEqual(first.map((device: { dev: string; circuit: string }) => `${device.dev} ${device.circuit}`), ['do 1_02']);
    assert.equal(deviceIn(first, 'do', '1_02').value, current ? 0 : 1);
    assert.equal(client.received.length, 1, 'nothing else was pushed');
    // The MQTT mirror saw every settings change, in order, then the reading.
    assert.deepEqual(mirrored, ['do 1_01', 'di 1_02', 'di 1_02', 'watchdog 1_01', 'do 1_01', 'do 1_02']);
    // A reading of a device whose settings changed carries the settings.
    gate.setInput(1, true);
    const pushed = await client.nextMatching((message) => deviceIn(message, 'di', '1_02')?.value === 1);
    assert.equal(deviceIn(pushed, 'di', '1_02').alias, 'door');
    assert.equal(deviceIn(pushed, 'di', '1_02').debounce, 70);
  } finally {
    unsubscribe();
    await client.close();
  }
});
