import assert from 'node:assert/strict';
import { once } from 'node:events';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import WebSocket from 'ws';
import { parseCommandPayload } from '../../../src/api/mqtt/command-payload.js';
import { CANONICAL_TYPES } from '../../../src/registry/type-names.js';
import { RequestError } from '../../../src/registry/request-error.js';
import { spawnDaemon, type SpawnedDaemon } from '../../helpers/spawn-daemon.js';
import { SIMULATED_BUS, configFile } from '../../helpers/http-call.js';

// Fuzzing the command inputs of the push interfaces: MQTT command payloads
// through their parser, WebSocket messages through a real socket to the built
// daemon. Fixed seeds; input counts in the test names.

const MQTT_RUNS = 2000;
const WS_RUNS = 300;
const SEED = 0xc0ffee;

const TYPE_NAMES = [...CANONICAL_TYPES, 'input', 'relay', 'output', 'analoginput', 'nonsense', ''];
const CIRCUITS = ['1_01', '1_02', '1_03', '9_99', '', 'all', '../etc', 'x'.repeat(300)];

test(`MQTT command payloads: any bytes give fields or a 4xx RequestError (${MQTT_RUNS} inputs)`, () => {
  const payload = fc.oneof(
    fc.constantFrom('1', 'ON', ' off ', 'true', 'False', '{}', '{"value":1}', '[]', 'null', '"1"', '{"value":'),
    fc.json().map((text) => text),
    fc.string({ unit: 'binary', maxLength: 200 }),
    fc.uint8Array({ maxLength: 200 }).map((bytes) => Buffer.from(bytes).toString('latin1')),
  );
  fc.assert(
    fc.property(fc.constantFrom(...CANONICAL_TYPES), payload, (type, text) => {
      try {
        const fields = parseCommandPayload(type, Buffer.from(text, 'utf8'));
        assert.ok(fields !== null && typeof fields === 'object' && !Array.isArray(fields));
      } catch (error) {
        assert.ok(error instanceof RequestError, `expected a RequestError, got ${String(error)}`);
        assert.ok(error.status >= 400 && error.status < 500 && error.message.length > 0);
      }
    }),
    { numRuns: MQTT_RUNS, seed: SEED },
  );
});

let daemon: SpawnedDaemon;

before(async () => {
  const { dir, file } = configFile(`apis:\n  websocket: {enabled: true}\n${SIMULATED_BUS}`);
  daemon = await spawnDaemon(['--config', file], { cwd: dir });
});

after(async () => {
  assert.equal(await daemon.stop(), 0, 'still healthy enough to shut down cleanly');
});

const wsMessage = fc.oneof(
  fc.record(
    {
      cmd: fc.constantFrom('all', 'filter', 'full', 'set', 'get', '__proto__', 'constructor', 'close', ''),
      dev: fc.constantFrom(...TYPE_NAMES),
      circuit: fc.constantFrom(...CIRCUITS),
      value: fc.jsonValue({ depthSize: 'small' }),
      devices: fc.array(fc.constantFrom(...TYPE_NAMES, 'default'), { maxLength: 4 }),
      debounce: fc.jsonValue({ depthSize: 'small' }),
      alias: fc.string({ maxLength: 20 }),
    },
    { requiredKeys: ['cmd'] },
  ).map((message) => JSON.stringify(message)),
  fc.json(),
  fc.string({ unit: 'binary', maxLength: 200 }),
);

test(`WebSocket messages: every one is handled, answered with JSON, the socket stays open, a bystander only sees device lists (${WS_RUNS} inputs)`, async () => {
  // The fuzzing client opts in to error replies, which mark where each input's answers end.
  const ws = new WebSocket(daemon.baseUrl.replace(/^http/, 'ws') + '/ws?errors=1');
  const bystander = new WebSocket(daemon.baseUrl.replace(/^http/, 'ws') + '/ws');
  await Promise.all([once(ws, 'open'), once(bystander, 'open')]);
  const seenByBystander: Array<{ data: unknown; isBinary: boolean }> = [];
  bystander.on('message', (data, isBinary) => seenByBystander.push({ data: JSON.parse(String(data)), isBinary }));
  const inbox: any[] = [];
  let wake: (() => void) | undefined;
  ws.on('message', (data) => {
    inbox.push(JSON.parse(String(data)));
    wake?.();
  });
  let round = 0;
  /** Sends `text`, then a marker command whose error reply shows everything before it was handled. */
  const exchange = async (text: string): Promise<any[]> => {
    const marker = `marker-${++round}`;
    ws.send(text);
    ws.send(JSON.stringify({ cmd: marker }));
    const isMarker = (message: any) => !Array.isArray(message) && JSON.stringify(message?.errors ?? '').includes(marker);
    const deadline = Date.now() + 5000;
    while (!inbox.some(isMarker)) {
      assert.ok(Date.now() < deadline, `no answer to the marker after ${JSON.stringify(text).slice(0, 200)}`);
      await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(resolve, 100);
      });
    }
    return inbox.splice(0, inbox.findIndex(isMarker) + 1).slice(0, -1);
  };
  try {
    await fc.assert(
      fc.asyncProperty(wsMessage, async (text) => {
        const answers = await exchange(text);
        for (const answer of answers) {
          assert.ok(answer !== null && typeof answer === 'object', `not a JSON object or array: ${JSON.stringify(answer)}`);
          if (!Array.isArray(answer) && 'success' in answer) assert.equal(Object.keys(answer.errors).length, 1);
        }
        assert.equal(ws.readyState, WebSocket.OPEN);
      }),
      { numRuns: WS_RUNS, seed: SEED },
    );
    const listing = await exchange(JSON.stringify({ cmd: 'all' }));
    assert.ok(listing.some((answer) => Array.isArray(answer) && answer.length > 0), 'the daemon still lists its devices');
    // A write after the fuzzing still reaches the bystander, as the device list it always was.
    for (const value of [1, 0]) await exchange(JSON.stringify({ cmd: 'set', dev: 'led', circuit: '1_01', value }));
    const deadline = Date.now() + 5000;
    while (!seenByBystander.some(({ data }) => Array.isArray(data) && data.some((device) => device.dev === 'led'))) {
      assert.ok(Date.now() < deadline, 'the bystander got the LED changes');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    for (const { data, isBinary } of seenByBystander) {
      assert.equal(isBinary, false);
      assert.ok(Array.isArray(data), `the bystander got ${JSON.stringify(data).slice(0, 200)}`);
    }
    assert.equal(bystander.readyState, WebSocket.OPEN);
  } finally {
    ws.close();
    bystander.close();
    await Promise.all([once(ws, 'close'), once(bystander, 'close')]);
  }
});
