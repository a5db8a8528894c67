import assert from 'node:assert/strict';
import { once } from 'node:events';
import { test } from 'node:test';
import { WebSocket } from 'ws';
import { startGate, until, type Gate } from '../../helpers/in-process.js';
import { startWebhookReceiver } from '../../helpers/webhook-receiver.js';

// The meta view: quality, ts, age_s (and a DI's counter_total) for clients
// that ask (`?meta=1`, `/ws?meta=1`, `apis.webhook.meta`), following a
// simulated board that falls silent and comes back.

type Item = Record<string, unknown>;

const SCENE = (hookPort: number, meta: boolean) => `
quality:
  stale_min_ms: 300
apis:
  websocket:
    enabled: true
  webhook:
    enabled: true
    address: http://127.0.0.1:${hookPort}/hook
    device_mask: [di]
    complex_events: true
    meta: ${meta}
comm_channels:
  SIM:
    type: SIMULATOR
    toggle_ms: 0
    devices:
      1:
        model: "00"
        slave-id: 1
        scan_frequency: 50
`;

async function getJson(gate: Gate, path: string): Promise<unknown> {
  const response = await fetch(`${gate.baseUrl}${path}`);
  assert.equal(response.status, 200, `${path}: ${response.status}`);
  return response.json();
}

/** A WebSocket client that keeps every device it was sent, in order. */
async function wsClient(url: string): Promise<{ socket: WebSocket; devices: Item[] }> {
  const socket = new WebSocket(url);
  socket.on('error', () => {});
  const devices: Item[] = [];
  socket.on('message', (data) => {
    const message = JSON.parse(String(data)) as Item | Item[];
    devices.push(...(Array.isArray(message) ? message : [message]));
  });
  await once(socket, 'open');
  return { socket, devices };
}

async function webhookReceiver(): Promise<{ port: number; bodies: Item[][]; close(): void }> {
  const receiver = await startWebhookReceiver();
  return {
    port: receiver.port,
    get bodies() {
      return receiver.bodies.map((body) => JSON.parse(body) as Item[]);
    },
    close: () => receiver.close(),
  };
}

const META_FIELDS = ['quality', 'ts', 'age_s'];

test('?meta=1 appends quality, ts and age_s to every device, and counter_total to DIs; without it nothing changes', async () => {
  const receiver = await webhookReceiver();
  const gate = await startGate(SCENE(receiver.port, true));
  try {
    await until(() => gate.runtime.slaves[0]!.state === 'online', 'the board to be read');
    gate.board.addPulses(0, 3);
    await until(() => gate.runtime.registry.find('di', '1_01')!.full()['counter'] === 3, 'the pulses to be read');
    const all = (await getJson(gate, '/rest/all?meta=1')) as Item[];
    const plain = (await getJson(gate, '/rest/all')) as Item[];
    assert.equal(all.length, plain.length);
    for (const [i, item] of all.entries()) {
      // EVOK's fields first, in EVOK's order, then ours.
      assert.deepEqual(Object.keys(item).slice(0, Object.keys(plain[i]!).length), Object.keys(plain[i]!));
      for (const field of META_FIELDS) assert.ok(field in item, `${String(item['dev'])} ${String(item['circuit'])} has ${field}`);
      for (const field of [...META_FIELDS, 'counter_total']) assert.ok(!(field in plain[i]!), `the default view has no ${field}`);
    }
    const di = all.find((item) => item['dev'] === 'di' && item['circuit'] === '1_01')!;
    assert.equal(di['quality'], 'good');
    assert.equal(di['counter'], 3);
    assert.equal(di['counter_total'], 3);
    assert.ok(Math.abs(Date.parse(di['ts'] as string) - Date.now()) < 2000, `ts ${String(di['ts'])} is recent`);
    assert.equal(typeof di['age_s'], 'number');
    assert.ok((di['age_s'] as number) < 2);

    for (const path of ['/rest/di/1_01?meta=1', '/json/di/1_01?meta=1', '/rest/input/1_01?meta=true']) {
      const one = (await getJson(gate, path)) as Item;
      assert.equal(one['quality'], 'good', path);
      assert.equal(one['counter_total'], 3, path);
    }
    assert.deepEqual(await getJson(gate, '/rest/di/1_01/counter_total?meta=1'), { counter_total: 3 });
    const list = (await getJson(gate, '/rest/di/all?meta=1')) as Item[];
    assert.ok(list.every((item) => item['quality'] === 'good' && typeof item['counter_total'] === 'number'));
    const plainOne = (await getJson(gate, '/rest/di/1_01')) as Item;
    assert.ok(!('quality' in plainOne) && !('counter_total' in plainOne));
    const missing = await fetch(`${gate.baseUrl}/rest/di/1_01/counter_total`);
    assert.equal(missing.status, 404, 'counter_total is not a field of the default view');
    await missing.text();

    // The webhook with `meta: true` carries the same fields.
    gate.setInput(0, true);
    await until(() => receiver.bodies.some((body) => body.some((item) => item['circuit'] === '1_01' && item['value'] === 1)), 'the webhook');
    const hooked = receiver.bodies.flat().find((item) => item['circuit'] === '1_01' && item['value'] === 1)!;
    assert.equal(hooked['quality'], 'good');
    assert.equal(hooked['counter_total'], 3);
  } finally {
    await gate.close();
    receiver.close();
  }
});

test('a board that falls silent turns stale, then offline, for meta clients (pushed too); back, it is good again; EVOK clients see only the slave', async () => {
  const receiver = await webhookReceiver();
  const gate = await startGate(SCENE(receiver.port, false));
  try {
    await until(() => gate.runtime.slaves[0]!.state === 'online', 'the board to be read');
    const meta = await wsClient(`${gate.wsUrl}?meta=1`);
    const plain = await wsClient(gate.wsUrl);
    const seen: string[] = ['good'];
    const quality = async () => ((await getJson(gate, '/rest/di/1_01?meta=1')) as Item)['quality'] as string;
    assert.equal(await quality(), 'good');
    gate.board.powerOff();
    const silentAt = Date.now();
    // Polled while it happens: the sequence of qualities a client sees.
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      const now = await quality();
      if (seen.at(-1) !== now) seen.push(now);
      if (now === 'offline') break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    // Stale after 300 ms without a read (the floor of the stale rule here), offline after a second of
    // silence: seen by polling or pushed to the meta client (either may miss the window on a loaded machine, not both).
    const pushed = meta.devices.filter((item) => item['circuit'] === '1_01' && item['dev'] === 'di').map((item) => item['quality']);
    assert.equal(seen.at(-1), 'offline', `qualities seen: ${seen.join(' → ')}`);
    assert.ok(seen.includes('stale') || pushed.includes('stale'), `stale before offline: polled ${seen.join(' → ')}, pushed ${pushed.join(' → ')}`);
    assert.ok(seen.every((quality) => ['good', 'stale', 'offline'].includes(quality)));
    assert.ok(Date.now() - silentAt < 5000, 'offline within the bound');
    await until(() => meta.devices.some((item) => item['circuit'] === '1_01' && item['quality'] === 'offline'), 'a meta push saying offline');
    // The offline device is answered in the meta view (with its age), refused in EVOK's.
    const offline = (await getJson(gate, '/rest/di/1_01?meta=1')) as Item;
    assert.equal(offline['quality'], 'offline');
    assert.ok((offline['age_s'] as number) >= 0.5, `age ${String(offline['age_s'])}`);
    const refused = await fetch(`${gate.baseUrl}/rest/di/1_01`);
    assert.equal(refused.status, 503);
    await refused.text();

    gate.board.powerOn(false);
    await until(() => gate.runtime.slaves[0]!.state === 'online', 'the board to come back', 40_000);
    assert.equal(await quality(), 'good');
    await until(() => meta.devices.some((item, i) => item['circuit'] === '1_01' && item['quality'] === 'good' && meta.devices.slice(0, i).some((before) => before['quality'] === 'offline')), 'a meta push saying good again');
    // EVOK's clients got the slave's own news and nothing about quality.
    assert.ok(plain.devices.every((item) => !('quality' in item)));
    assert.ok(plain.devices.some((item) => item['dev'] === 'modbus_slave' && item['online'] === false));
    assert.ok(!plain.devices.some((item) => item['dev'] === 'di'), 'no DI push: its EVOK fields did not change');
    meta.socket.close();
    plain.socket.close();
  } finally {
    await gate.close();
    receiver.close();
  }
});

test("EVOK's counter reset leaves counter_total alone, is logged, and counter_total can be set on its own", async () => {
  const receiver = await webhookReceiver();
  const lines: string[] = [];
  const { createLogger } = await import('../../../src/logging/log.js');
  const gate = await startGate(SCENE(receiver.port, false), { log: createLogger('INFO', (line) => lines.push(line)) });
  try {
    await until(() => gate.runtime.slaves[0]!.state === 'online', 'the board to be read');
    gate.board.addPulses(1, 40);
    const total = async () => ((await getJson(gate, '/rest/di/1_02?meta=1')) as Item)['counter_total'];
    await until(() => gate.runtime.registry.find('di', '1_02')!.full()['counter'] === 40, 'the pulses');
    await until(() => gate.runtime.registry.find('di', '1_02')!.metaState()['counter_total'] === 40, 'the total');
    const reset = await fetch(`${gate.baseUrl}/json/di/1_02`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"counter":0}' });
    const body = (await reset.json()) as { result: Item };
    assert.equal(body.result['counter'], 0);
    assert.ok(!('counter_total' in body.result), "the write's reply is EVOK's");
    gate.board.addPulses(1, 2);
    await until(() => gate.runtime.registry.find('di', '1_02')!.full()['counter'] === 2, 'the new pulses');
    await until(() => gate.runtime.registry.find('di', '1_02')!.metaState()['counter_total'] === 42, 'the total going on');
    assert.equal(await total(), 42);
    assert.ok(lines.some((line) => /di 1_02: counter set to 0 by a client; counter_total stays at 40/.test(line)), lines.join('\n'));
    const set = await fetch(`${gate.baseUrl}/json/di/1_02`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"counter_total":0}' });
    assert.equal(set.status, 200);
    await set.text();
    assert.equal(await total(), 0);
    assert.ok(lines.some((line) => /counter_total set from 42 to 0 by a client/.test(line)));
  } finally {
    await gate.close();
    receiver.close();
  }
});
