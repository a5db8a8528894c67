import assert from 'node:assert/strict';
import { once } from 'node:events';
import { after, before, describe, test } from 'node:test';
import WebSocket from 'ws';
import { CANONICAL_TYPES, canonicalType } from '../../../src/registry/type-names.js';
import { startGate, STILL_BOARD, type Gate } from '../../helpers/in-process.js';
import { connect, deviceIn, type TestClient } from '../../helpers/ws-client.js';

// WebSocket commands and pushes, through real `ws` clients against the
// assembled daemon, with the simulated board's inputs moved by the test.

let gate: Gate;

before(async () => {
  gate = await startGate();
});

after(async () => {
  await gate.close();
});

async function withClient(run: (client: TestClient) => Promise<void>, query = ''): Promise<void> {
  const client = await connect(gate.wsUrl + query);
  try {
    await run(client);
  } finally {
    await client.close();
  }
}

/** Flip input 1_01 and return its new value as pushed to `watcher`. */
async function flipInput(watcher: TestClient): Promise<number> {
  const now = (await (await fetch(`${gate.baseUrl}/rest/di/1_01`)).json()).value;
  const next = now ? 0 : 1;
  gate.setInput(0, next === 1);
  await watcher.nextMatching((message) => deviceIn(message, 'di', '1_01')?.value === next);
  return next;
}

describe('pushes', () => {
  test('an input change reaches every client as an array of full device objects', async () => {
    const clients = await Promise.all([connect(gate.wsUrl), connect(gate.wsUrl), connect(gate.wsUrl)]);
    try {
      const value = (await (await fetch(`${gate.baseUrl}/rest/di/1_01`)).json()).value ? 0 : 1;
      gate.setInput(0, value === 1);
      for (const client of clients) {
        const message = await client.nextMatching((m) => deviceIn(m, 'di', '1_01')?.value === value);
        assert.ok(Array.isArray(message));
        const di = deviceIn(message, 'di', '1_01');
        assert.equal(di.value, value);
        assert.deepEqual(Object.keys(di).slice(0, 3), ['dev', 'circuit', 'value']);
        assert.equal(di.debounce, 50);
      }
    } finally {
      await Promise.all(clients.map((client) => client.close()));
    }
  });

  test('/ws/ with a trailing slash is the same endpoint', async () => {
    const client = await connect(`${gate.wsUrl}/`);
    client.send({ cmd: 'full', dev: 'di', circuit: '1_02' });
    assert.equal((await client.reply()).circuit, '1_02');
    await client.close();
  });

  test('other paths are not upgraded', async () => {
    const ws = new WebSocket(gate.wsUrl.replace('/ws', '/wsx'));
    const [error] = await once(ws, 'error');
    assert.match((error as Error).message, /404/);
  });
});

describe('filter', () => {
  // A second, unfiltered client proves the change was pushed; a `full` reply
  // sent afterwards on the filtered socket then proves nothing came before it.
  async function nothingPushed(filtered: TestClient, change: () => Promise<void>): Promise<void> {
    await change();
    filtered.send({ cmd: 'full', dev: 'do', circuit: '1_04' });
    const first = await filtered.next();
    assert.equal(Array.isArray(first), false, `expected only the full reply, got ${JSON.stringify(first)}`);
    assert.equal(first.circuit, '1_04');
  }

  test('alternate names match by type: "input" gets DI changes (EVOK compared dev text)', () =>
    withClient(async (filtered) => {
      const watcher = await connect(gate.wsUrl);
      filtered.send({ cmd: 'filter', devices: ['input'] });
      filtered.send({ cmd: 'full', dev: 'di', circuit: '1_01' });
      await filtered.reply(); // filter applied before this reply
      const value = await flipInput(watcher);
      const pushed = await filtered.next();
      assert.equal(deviceIn(pushed, 'di', '1_01').value, value);
      assert.ok(pushed.every((device: { dev: string }) => device.dev === 'di'));
      // An output change is not for this client.
      await nothingPushed(filtered, async () => {
        const res = await fetch(`${gate.baseUrl}/json/do/1_03`, { method: 'POST', body: JSON.stringify({ value: 1 }) });
        assert.equal(res.status, 200);
        await watcher.nextMatching((m) => deviceIn(m, 'do', '1_03')?.value === 1);
        await fetch(`${gate.baseUrl}/json/do/1_03`, { method: 'POST', body: JSON.stringify({ value: 0 }) });
        await watcher.nextMatching((m) => deviceIn(m, 'do', '1_03')?.value === 0);
      });
      await watcher.close();
    }));

  test('an empty filter pushes nothing', () =>
    withClient(async (filtered) => {
      const watcher = await connect(gate.wsUrl);
      filtered.send({ cmd: 'filter', devices: [] });
      await nothingPushed(filtered, async () => {
        await flipInput(watcher);
      });
      await watcher.close();
    }));

  test('["default"] alone restores the default filter (EVOK rejected it)', () =>
    withClient(async (client) => {
      const watcher = await connect(gate.wsUrl);
      client.send({ cmd: 'filter', devices: [] });
      client.send({ cmd: 'filter', devices: ['default'] });
      const value = await flipInput(watcher);
      const pushed = await client.next();
      assert.equal(deviceIn(pushed, 'di', '1_01').value, value);
      await watcher.close();
    }));

  test('unknown names are reported to a client that asked for errors; the known ones still apply', () =>
    withClient(async (client) => {
      client.send({ cmd: 'filter', devices: ['digitaloutput', 'uart'] });
      const reply = await client.reply();
      assert.equal(reply.success, false);
      assert.match(reply.errors.KeyError, /uart/);
      client.send({ cmd: 'set', dev: 'do', circuit: '1_02', value: 1 });
      assert.equal(deviceIn(await client.next(), 'do', '1_02').value, 1);
      client.send({ cmd: 'set', dev: 'do', circuit: '1_02', value: 0 });
      await client.nextMatching((m) => deviceIn(m, 'do', '1_02')?.value === 0);
    }, '?errors=1'));

  test('a list with no known name is an error and leaves the filter as it was', () =>
    withClient(async (client) => {
      client.send({ cmd: 'filter', devices: ['uart', 'rs485'] });
      assert.equal((await client.reply()).success, false);
      client.send({ cmd: 'set', dev: 'do', circuit: '1_02', value: 1 });
      assert.equal(deviceIn(await client.next(), 'do', '1_02').value, 1, 'the default filter still applies');
      client.send({ cmd: 'set', dev: 'do', circuit: '1_02', value: 0 });
      await client.nextMatching((m) => deviceIn(m, 'do', '1_02')?.value === 0);
    }, '?errors=1'));
});

describe('all', () => {
  test("lists every device in EVOK's canonical type order (do before di)", () =>
    withClient(async (client) => {
      client.send({ cmd: 'all' });
      const all = await client.next();
      const types = all.map((device: { dev: string }) => device.dev);
      assert.ok(types.includes('do') && types.includes('di'));
      // `dev` texts such as `wd` are alternate names of the canonical types.
      const ranks = types.map((dev: string) => CANONICAL_TYPES.indexOf(canonicalType(dev)!));
      assert.ok(ranks.every((rank: number) => rank >= 0));
      assert.deepEqual(ranks, [...ranks].sort((a: number, b: number) => a - b));
      assert.equal(all.length, [...gate.runtime.registry.devices()].length);
    }));

  test('is made anew after a change: a client asking again, and another client, see the new value', async () => {
    const other = await connect(gate.wsUrl);
    try {
      await withClient(async (client) => {
        const total = [...gate.runtime.registry.devices()].length;
        const listing = (message: unknown): boolean => Array.isArray(message) && message.length === total;
        client.send({ cmd: 'all' });
        other.send({ cmd: 'all' });
        const before = deviceIn(await client.nextMatching(listing), 'di', '1_01')?.value;
        assert.equal(deviceIn(await other.nextMatching(listing), 'di', '1_01')?.value, before, 'both clients got the same listing');
        const next = await flipInput(client);
        assert.notEqual(next, before);
        client.send({ cmd: 'all' });
        other.send({ cmd: 'all' });
        assert.equal(deviceIn(await client.nextMatching(listing), 'di', '1_01')?.value, next);
        assert.equal(deviceIn(await other.nextMatching(listing), 'di', '1_01')?.value, next);
      });
    } finally {
      await other.close();
    }
  });

  test('with all_filtered: the default filter lists di/ro/ai/ao/sensor; a custom filter its own types (EVOK: [])', async () => {
    const filtered = await startGate(STILL_BOARD.replace('enabled: true', 'enabled: true\n    all_filtered: true'));
    const client = await connect(filtered.wsUrl);
    try {
      client.send({ cmd: 'all' });
      const byDefault = await client.next();
      assert.ok(byDefault.length > 0);
      assert.ok(byDefault.every((device: { dev: string }) => ['di', 'ro', 'ai', 'ao', 'temp', '1wdevice'].includes(device.dev)));
      client.send({ cmd: 'filter', devices: ['output'] });
      client.send({ cmd: 'all' });
      const outputs = await client.next();
      assert.deepEqual(outputs.map((device: { circuit: string }) => device.circuit), ['1_01', '1_02', '1_03', '1_04']);
      assert.ok(outputs.every((device: { dev: string }) => device.dev === 'do'));
    } finally {
      await client.close();
      await filtered.close();
    }
  });
});

describe('full', () => {
  test('answers the device object (EVOK never answered)', () =>
    withClient(async (client) => {
      client.send({ cmd: 'full', dev: 'digitalinput', circuit: '1_03' });
      const reply = await client.reply();
      assert.equal(reply.dev, 'di');
      assert.equal(reply.circuit, '1_03');
      assert.equal(reply.debounce, 50);
    }));

  test('accepts an alias as circuit', () =>
    withClient(async (client) => {
      const res = await fetch(`${gate.baseUrl}/json/do/1_04`, { method: 'POST', body: JSON.stringify({ alias: 'porch' }) });
      assert.equal(res.status, 200);
      client.send({ cmd: 'full', dev: 'do', circuit: 'porch' });
      assert.equal((await client.reply()).circuit, '1_04');
      client.send({ cmd: 'full', dev: 'output', circuit: 'al_porch' });
      assert.equal((await client.reply()).circuit, '1_04');
    }));
});

describe('set', () => {
  test('a bare value is the first setter parameter; success arrives as the normal push', () =>
    withClient(async (client) => {
      client.send({ cmd: 'set', dev: 'do', circuit: '1_01', value: 1 });
      assert.equal(deviceIn(await client.next(), 'do', '1_01').value, 1);
      client.send({ cmd: 'set', dev: 'output', circuit: '1_01', value: '0' });
      assert.equal(deviceIn(await client.next(), 'do', '1_01').value, 0);
    }));

  test('for a DI the bare value is its debounce, as in EVOK', () =>
    withClient(async (client) => {
      client.send({ cmd: 'set', dev: 'di', circuit: '1_02', value: 70 });
      client.send({ cmd: 'full', dev: 'di', circuit: '1_02' });
      assert.equal((await client.reply()).debounce, 70);
    }));

  test('an object value names fields; without value the other keys are fields', () =>
    withClient(async (client) => {
      client.send({ cmd: 'set', dev: 'do', circuit: '1_02', value: { value: 1 } });
      assert.equal(deviceIn(await client.nextMatching((m) => deviceIn(m, 'do', '1_02')), 'do', '1_02').value, 1);
      client.send({ cmd: 'set', dev: 'di', circuit: '1_03', debounce: 33 });
      client.send({ cmd: 'full', dev: 'di', circuit: '1_03' });
      assert.equal((await client.reply()).debounce, 33);
      client.send({ cmd: 'set', dev: 'do', circuit: '1_02', value: 0 });
      await client.nextMatching((m) => deviceIn(m, 'do', '1_02')?.value === 0);
    }));

  test('works with an alias as circuit', () =>
    withClient(async (client) => {
      await fetch(`${gate.baseUrl}/json/do/1_03`, { method: 'POST', body: JSON.stringify({ alias: 'pump' }) });
      client.send({ cmd: 'set', dev: 'do', circuit: 'pump', value: 1 });
      const pushed = await client.nextMatching((m) => deviceIn(m, 'do', '1_03')?.value === 1);
      assert.equal(deviceIn(pushed, 'do', '1_03').alias, 'pump');
      client.send({ cmd: 'set', dev: 'do', circuit: 'al_pump', value: 0 });
      await client.nextMatching((m) => deviceIn(m, 'do', '1_03')?.value === 0);
    }));
});

/**
 * Sends a `full` for `1_01` and returns every message up to its reply: what
 * the client got for anything it sent before.
 */
async function untilFull(client: TestClient): Promise<unknown[]> {
  client.send({ cmd: 'full', dev: 'di', circuit: '1_01' });
  const seen: unknown[] = [];
  for (;;) {
    const message = await client.next();
    if (!Array.isArray(message) && message.dev === 'di' && message.circuit === '1_01') return seen;
    seen.push(message);
  }
}

describe('bad messages get an error reply only with ?errors=1; the socket stays open', () => {
  const cases: Array<[string, unknown, string]> = [
    ['invalid JSON', '{"cmd":', 'JSONDecodeError'],
    ['not an object', '[1,2]', 'TypeError'],
    ['unknown command', { cmd: 'reset', dev: 'do', circuit: '1_01' }, 'UnknownCommand'],
    ['a device method that is not a command', { cmd: 'get_state', dev: 'do', circuit: '1_01' }, 'UnknownCommand'],
    ['no cmd', { dev: 'do' }, 'UnknownCommand'],
    ['missing dev', { cmd: 'full', circuit: '1_01' }, 'TypeError'],
    ['unknown type', { cmd: 'full', dev: 'foo', circuit: '1_01' }, 'KeyError'],
    ['unknown circuit', { cmd: 'set', dev: 'do', circuit: '9_99', value: 1 }, 'Exception'],
    ['value text int() cannot read', { cmd: 'set', dev: 'do', circuit: '1_01', value: '1.5' }, 'ValueError'],
    ['value of a wrong type', { cmd: 'set', dev: 'do', circuit: '1_01', value: [1] }, 'ValidationError'],
    ['unknown field', { cmd: 'set', dev: 'do', circuit: '1_01', colour: 'red' }, 'ValidationError'],
    ['filter without a list', { cmd: 'filter', devices: 'di' }, 'TypeError'],
  ];
  for (const [name, message, kind] of cases) {
    test(`${name}: ${kind} with ?errors=1`, () =>
      withClient(async (client) => {
        client.send(message);
        const reply = await client.reply();
        assert.equal(reply.success, false);
        assert.equal(typeof reply.errors[kind], 'string', JSON.stringify(reply));
        client.send({ cmd: 'full', dev: 'di', circuit: '1_01' });
        assert.equal((await client.reply()).circuit, '1_01');
      }, '?errors=1'));
  }

  test('by default none of them is answered (as EVOK), the socket stays open and pushes carry on', () =>
    withClient(async (client) => {
      for (const [, message] of cases) {
        // Nothing that is not an array arrives before the marker's reply.
        client.send(message);
        const before = await untilFull(client);
        assert.ok(before.every(Array.isArray), `${JSON.stringify(message)} was answered with ${JSON.stringify(before)}`);
      }
      client.ws.send(Buffer.from('{"cmd":"all"}'), { binary: true });
      assert.deepEqual(await untilFull(client), []);
      assert.equal(client.ws.readyState, WebSocket.OPEN);
      const watcher = await connect(gate.wsUrl);
      const value = await flipInput(watcher);
      await client.nextMatching((m) => deviceIn(m, 'di', '1_01')?.value === value);
      await watcher.close();
      // Every frame this client got was a device list, apart from its own `full` replies.
      for (const message of client.received) assert.ok(Array.isArray(message) || message.dev === 'di', JSON.stringify(message));
    }));

  test('?errors=0 turns off what apis.websocket.error_replies turned on', async () => {
    const verbose = await startGate(STILL_BOARD.replace('enabled: true', 'enabled: true\n    error_replies: true'));
    const [loud, quiet] = await Promise.all([connect(verbose.wsUrl), connect(`${verbose.wsUrl}?errors=0`)]);
    try {
      for (const client of [loud, quiet]) client.send({ cmd: 'reboot' });
      assert.equal(typeof (await loud.reply()).errors.UnknownCommand, 'string');
      assert.deepEqual(await untilFull(quiet), []);
    } finally {
      await Promise.all([loud.close(), quiet.close()]);
      await verbose.close();
    }
  });

  test('a binary frame', () =>
    withClient(async (client) => {
      client.ws.send(Buffer.from('{"cmd":"all"}'), { binary: true });
      assert.equal((await client.reply()).success, false);
      assert.equal(client.ws.readyState, WebSocket.OPEN);
    }, '?errors=1'));

  test('a frame over 64 KiB is refused by closing with 1009 (message too big)', () =>
    withClient(async (client) => {
      client.send({ cmd: 'full', pad: 'x'.repeat(70 * 1024) });
      const [code] = await once(client.ws, 'close');
      assert.equal(code, 1009);
    }));
});
