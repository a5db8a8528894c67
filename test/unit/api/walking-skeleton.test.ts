import assert from 'node:assert/strict';
import { configFile } from '../../helpers/http-call.js';
import { after, before, describe, test } from 'node:test';
import { spawnDaemon, type SpawnedDaemon } from '../../helpers/spawn-daemon.js';

// The seed's requests, sent by a real HTTP client to the built daemon running
// as its own process with its built-in simulated controller.

let daemon: SpawnedDaemon;
let url: (path: string) => string;

before(async () => {
  daemon = await spawnDaemon([]);
  url = (path) => daemon.baseUrl + path;
});

after(async () => {
  assert.equal(await daemon.stop(), 0, 'daemon exits 0 on SIGTERM');
});

function form(body: Record<string, string>): RequestInit {
  return {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(body).toString(),
  };
}

function json(body: unknown): RequestInit {
  return { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) };
}

async function call(path: string, init?: RequestInit): Promise<{ status: number; type: string | null; body: any }> {
  const response = await fetch(url(path), init);
  const text = await response.text();
  const type = response.headers.get('content-type');
  return { status: response.status, type, body: type?.startsWith('application/json') && text ? JSON.parse(text) : text };
}

describe('GET a digital input', () => {
  test('has EVOK fields with EVOK types', async () => {
    const { status, type, body } = await call('/rest/di/1_01');
    assert.equal(status, 200);
    assert.equal(type, 'application/json');
    assert.deepEqual(Object.keys(body), [
      'dev', 'circuit', 'value', 'debounce', 'counter_modes', 'counter_mode', 'counter', 'mode', 'modes', 'glob_dev_id',
    ]);
    assert.equal(body.dev, 'di');
    assert.equal(body.circuit, '1_01');
    assert.ok(body.value === 0 || body.value === 1);
    assert.equal(body.debounce, 50, 'firmware default debounce');
    assert.deepEqual(body.counter_modes, ['Enabled', 'Disabled']);
    assert.equal(body.counter_mode, 'Enabled');
    assert.ok(Number.isInteger(body.counter));
    assert.equal(body.mode, 'Simple');
    assert.deepEqual(body.modes, ['Simple', 'DirectSwitch']);
    assert.equal(typeof body.glob_dev_id, 'number');
  });

  test('is the same with a trailing slash and through /json', async () => {
    const plain = await call('/rest/di/1_04');
    const slash = await call('/rest/di/1_04/');
    const viaJson = await call('/json/di/1_04', { headers: { Accept: 'text/html, application/json' } });
    for (const other of [slash, viaJson]) {
      assert.equal(other.status, 200);
      assert.equal(other.body.circuit, '1_04');
      assert.deepEqual(Object.keys(other.body), Object.keys(plain.body));
    }
  });
});

describe('write a digital output', () => {
  test('form POST switches it on and answers the confirmed state', async () => {
    const { status, body } = await call('/rest/do/1_01', form({ value: '1' }));
    assert.equal(status, 200);
    assert.equal(body.success, true);
    assert.equal(body.result.dev, 'do');
    assert.equal(body.result.circuit, '1_01');
    assert.equal(body.result.value, 1);
    assert.equal(body.result.pending, false);
    assert.equal((await call('/rest/do/1_01')).body.value, 1);
  });

  test('JSON POST switches it off, with and without a trailing slash', async () => {
    const off = await call('/json/do/1_02/', json({ value: 1 }));
    assert.equal(off.status, 200);
    assert.equal(off.body.result.value, 1);
    const on = await call('/json/do/1_02', json({ value: 0 }));
    assert.deepEqual({ success: on.body.success, value: on.body.result.value }, { success: true, value: 0 });
    assert.equal((await call('/json/do/1_02')).body.value, 0);
  });

  test('every DO of the seed board exists', async () => {
    for (const circuit of ['1_01', '1_02', '1_03', '1_04']) {
      assert.equal((await call(`/rest/do/${circuit}`)).body.circuit, circuit);
    }
  });
});

describe('errors use EVOK envelope and a fitting status', () => {
  const cases: Array<[string, string, RequestInit | undefined, number]> = [
    ['unknown device type', '/rest/foo/1', undefined, 404],
    ['unknown circuit', '/rest/di/9_99', undefined, 404],
    ['value text that int() cannot read', '/rest/do/1_01', form({ value: '1.5' }), 400],
    ['value not a number', '/json/do/1_01', json({ value: 'abc' }), 400],
    ['value missing', '/rest/do/1_01', form({}), 400],
    ['unknown field', '/rest/do/1_01', form({ colour: 'red' }), 400],
    ['malformed JSON', '/json/do/1_01', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"value":' }, 400],
    ['JSON that is not an object', '/json/do/1_01', json([1]), 400],
    ['unsupported content type', '/rest/do/1_01', { method: 'POST', headers: { 'Content-Type': 'text/csv' }, body: 'value,1' }, 415],
    ['body over 64 KiB', '/rest/do/1_01', form({ value: '1', pad: 'x'.repeat(70 * 1024) }), 413],
    ['method not allowed', '/rest/do/1_01', { method: 'PUT', body: 'value=1' }, 405],
  ];
  for (const [name, path, init, status] of cases) {
    test(name, async () => {
      const response = await call(path, init);
      assert.equal(response.status, status);
      assert.equal(response.body.success, false);
      assert.equal(Object.keys(response.body.errors).length, 1);
      assert.equal(typeof Object.values(response.body.errors)[0], 'string');
    });
  }

  test('a rejected write changes nothing', async () => {
    await call('/rest/do/1_03', form({ value: '0' }));
    assert.equal((await call('/rest/do/1_03', form({ value: 'on please' }))).status, 400);
    assert.equal((await call('/rest/do/1_03')).body.value, 0);
  });

  test('unknown type keeps EVOK error key', async () => {
    assert.deepEqual((await call('/rest/foo/1')).body, { success: false, errors: { KeyError: "'foo'" } });
  });

  test("EVOK's error keys: ValueError for unreadable number text, ValidationError for a wrong JSON type, Exception for an unknown circuit", async () => {
    const keyOf = async (path: string, init?: RequestInit) => Object.keys((await call(path, init)).body.errors);
    assert.deepEqual(await keyOf('/rest/do/1_01', form({ value: 'abc' })), ['ValueError']);
    assert.deepEqual(await keyOf('/json/do/1_01', json({ value: '1.5' })), ['ValueError']);
    assert.deepEqual(await keyOf('/json/do/1_01', json({ value: [1] })), ['ValidationError']);
    assert.deepEqual(await keyOf('/json/do/1_01', json({ value: null })), ['ValidationError']);
    assert.deepEqual(await keyOf('/rest/di/1_01', form({ debounce: 'abc' })), ['ValueError']);
    assert.deepEqual(await keyOf('/rest/do/1_01', form({ pwm_duty: 'half' })), ['ValueError']);
    assert.deepEqual(await keyOf('/rest/do/1_01', form({ colour: 'red' })), ['ValidationError']);
    assert.deepEqual(await keyOf('/rest/do/9_99', form({ value: '1' })), ['Exception']);
    assert.deepEqual(await keyOf('/json/do/1_01', { method: 'POST', body: '{"value":' }), ['JSONDecodeError']);
    const text = await call('/rest/do/1_01', form({ value: 'abc' }));
    assert.equal(text.status, 400);
    assert.match(text.body.errors.ValueError, /invalid literal for int\(\) with base 10: 'abc'/);
  });
});

test('GET /version answers EVOK 3\'s API version with iogate\'s own as build metadata', async () => {
  const { status, type, body } = await call('/version');
  assert.equal(status, 200);
  assert.equal(type, 'text/html; charset=UTF-8');
  // What an EVOK client reads: the first three numbers (a 3.x means EVOK 3's API).
  const [, major, minor, patch, build] = /^v(\d+)\.(\d+)\.(\d+)\+([0-9A-Za-z.-]+)$/.exec(body) ?? [];
  assert.deepEqual([major, minor, patch], ['3', '0', '6'], body);
  // SemVer build metadata: identifiers of [0-9A-Za-z-], which version parsers skip when comparing.
  assert.match(build ?? '', /^iogate\.\d+\.\d+\.\d+/, body);
});

test('simulated inputs change over time', async () => {
  const { dir, file: config } = configFile(
    'comm_channels:\n  SIM:\n    type: SIMULATOR\n    toggle_ms: 20\n    devices:\n      1:\n        model: "00"\n',
    'iogate-toggle-',
  );
  const fast = await spawnDaemon(['--config', config], { cwd: dir });
  try {
    const seen = new Set<number>();
    // Bounded: 20 ms toggling shows both levels well within 200 reads.
    for (let i = 0; i < 200 && seen.size < 2; i++) {
      seen.add((await (await fetch(`${fast.baseUrl}/rest/di/1_01`)).json()).value);
    }
    assert.deepEqual([...seen].sort(), [0, 1]);
  } finally {
    await fast.stop();
  }
});
