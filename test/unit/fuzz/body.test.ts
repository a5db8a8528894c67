import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { Agent, request } from 'node:http';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { parseFormBody, parseJsonObject } from '../../../src/api/http/body.js';
import { RequestError } from '../../../src/registry/request-error.js';
import { spawnDaemon, type SpawnedDaemon } from '../../helpers/spawn-daemon.js';
import { SIMULATED_BUS, configFile } from '../../helpers/http-call.js';

// Fuzzing the request body parsers: in-process at volume, then a smaller
// share through real HTTP against the built daemon, where a body also goes
// through device validation and the write path. Fixed seeds; input counts in
// the test names.

const PARSER_RUNS = 2000;
const HTTP_RUNS = 300;
const SEED = 0x5ec0de;

/** Field names the devices know, so random bodies get past the first check often enough to reach validation. */
const FIELDS = ['value', 'alias', 'mode', 'pwm_freq', 'pwm_duty', 'debounce', 'counter', 'counter_mode', 'timeout', 'range', 'save'];

const jsonish = fc.oneof(
  fc.json({ depthSize: 'medium' }),
  fc.dictionary(fc.constantFrom(...FIELDS), fc.jsonValue({ depthSize: 'small' })).map((object) => JSON.stringify(object)),
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.nat({ max: 60 }).map((depth) => `{"value":${'['.repeat(depth)}1${']'.repeat(depth)}}`),
);

const formish = fc.oneof(
  fc.dictionary(fc.constantFrom(...FIELDS), fc.string({ unit: 'binary', maxLength: 30 })).map((object) => new URLSearchParams(object).toString()),
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.array(fc.constantFrom('value=1', 'value=', '=', '&', '%', '%zz', '%00', 'alias=x%20y', 'value=1e400', 'value=-0'), { maxLength: 6 }).map((parts) => parts.join('&')),
);

const contentTypes = fc.constantFrom(undefined, 'application/json', 'application/x-www-form-urlencoded', 'application/x-www-form-urlencoded; charset=utf-8', 'text/plain', 'text/csv', 'multipart/form-data; boundary=x', 'APPLICATION/JSON');

function fakeRequest(contentType: string | undefined): IncomingMessage {
  return { headers: contentType === undefined ? {} : { 'content-type': contentType } } as IncomingMessage;
}

function assertClientError(error: unknown): void {
  assert.ok(error instanceof RequestError, `expected a RequestError, got ${String(error)}`);
  assert.ok(error.status >= 400 && error.status < 500 && error.message.length > 0);
}

test(`body parsers: any bytes give a plain object or a 4xx RequestError (${PARSER_RUNS} inputs per parser)`, () => {
  fc.assert(
    fc.property(jsonish, (text) => {
      try {
        const value = parseJsonObject(Buffer.from(text, 'utf8'));
        assert.ok(value !== null && typeof value === 'object' && !Array.isArray(value));
      } catch (error) {
        assertClientError(error);
      }
    }),
    { numRuns: PARSER_RUNS, seed: SEED },
  );
  fc.assert(
    fc.property(fc.oneof(formish, jsonish), contentTypes, (text, type) => {
      try {
        const value = parseFormBody(fakeRequest(type), Buffer.from(text, 'utf8'));
        assert.equal(typeof value, 'object');
      } catch (error) {
        assertClientError(error);
      }
    }),
    { numRuns: PARSER_RUNS, seed: SEED },
  );
});

let daemon: SpawnedDaemon;
const agent = new Agent({ keepAlive: true, maxSockets: 1 });

before(async () => {
  const { dir, file } = configFile(SIMULATED_BUS);
  daemon = await spawnDaemon(['--config', file], { cwd: dir });
});

after(async () => {
  agent.destroy();
  assert.equal(await daemon.stop(), 0, 'still healthy enough to shut down cleanly');
});

function post(path: string, contentType: string | undefined, body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = contentType === undefined ? {} : { 'Content-Type': contentType };
    const req = request(daemon.baseUrl + path, { method: 'POST', headers, agent }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

test(`HTTP writes: random bodies to /rest and /json get an EVOK answer, never a 5xx (${HTTP_RUNS} inputs)`, async () => {
  const paths = ['/rest/do/1_01', '/json/do/1_02', '/rest/di/1_01', '/json/ai/1_01', '/rest/led/1_01', '/json/wd/1_01', '/rest/ao/1_01'];
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...paths), fc.oneof(formish, jsonish), contentTypes, async (path, body, type) => {
      const { status, text } = await post(path, type, body);
      assert.ok(status < 500, `${status} for ${path} ${type} ${JSON.stringify(body)}: ${text}`);
      const reply = JSON.parse(text);
      if (status === 200) assert.equal(reply.success, true);
      else assert.deepEqual([reply.success, Object.keys(reply.errors).length], [false, 1]);
    }),
    { numRuns: HTTP_RUNS, seed: SEED },
  );
  const check = await fetch(`${daemon.baseUrl}/rest/di/1_01`);
  assert.equal(check.status, 200, 'the daemon still serves after the fuzzing');
});
