import assert from 'node:assert/strict';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { spawnDaemon, type SpawnedDaemon } from '../../helpers/spawn-daemon.js';
import { FORM, SIMULATED_BUS, bearer, configFile, httpCall } from '../../helpers/http-call.js';
import { connect } from '../../helpers/ws-client.js';

// The audit log through the built daemon: one entry per write on each HTTP
// and WebSocket interface with the token's name as `who`, refusals and
// reloads, `GET /audit` for admins only, and a log a SIGKILL cut short still
// readable after a restart.

const ADMIN = 'admin-token-0123456789abcdef';
const SCADA = 'scada-token-fedcba9876543210';
const VIEWER = 'viewer-token-5555555555555555';

interface Entry {
  ts: string;
  who: string;
  from: string;
  interface: string;
  target: string;
  params: Record<string, unknown>;
  result: string;
}

describe('audit log', () => {
  let daemon: SpawnedDaemon;
  let dir: string;
  let file: string;
  const audit = async (query = ''): Promise<Entry[]> => {
    const reply = await httpCall(daemon.baseUrl, `/audit${query}`, { headers: bearer(ADMIN) });
    assert.equal(reply.status, 200, reply.text);
    return reply.json as Entry[];
  };
  /** Waits for an entry: writes are recorded once they settled, after their answer may have gone. */
  const entryMatching = async (match: (entry: Entry) => boolean): Promise<Entry> => {
    for (const deadline = Date.now() + 5000; Date.now() < deadline; ) {
      const found = (await audit('?limit=1000')).find(match);
      if (found) return found;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.fail('no such audit entry');
  };

  before(async () => {
    ({ dir, file } = configFile(
      [
        'apis:',
        '  websocket: {enabled: true}',
        '  auth:',
        '    loopback_anonymous: false',
        '    tokens:',
        `      - {name: anna, token: ${ADMIN}, scope: admin}`,
        `      - {name: scada, token: ${SCADA}, scope: write}`,
        `      - {name: viewer, token: ${VIEWER}, scope: read}`,
        SIMULATED_BUS,
      ].join('\n'),
      'iogate-audit-',
    ));
    daemon = await spawnDaemon(['--config', file], { cwd: dir });
  });

  after(async () => {
    if (daemon.child.exitCode === null && daemon.child.signalCode === null) await daemon.stop();
  });

  test('one entry per write on REST, JSON, bulk and RPC, with the token name, address, target, values and result', async () => {
    const post = (path: string, body: string, headers: Record<string, string>) => httpCall(daemon.baseUrl, path, { method: 'POST', headers: { ...headers, ...bearer(SCADA) }, body });
    assert.equal((await post('/rest/do/1_01', 'value=1', FORM)).status, 200);
    assert.equal((await post('/json/do/1_02', '{"value": 1}', { 'Content-Type': 'application/json' })).status, 200);
    assert.equal((await post('/bulk', '{"individual_assignments": [{"device_type": "do", "device_circuit": "1_03", "assigned_values": {"value": 1}}]}', { 'Content-Type': 'application/json' })).status, 200);
    assert.equal((await post('/rpc', '{"jsonrpc": "2.0", "id": 1, "method": "do_set", "params": ["1_04", 1]}', { 'Content-Type': 'application/json' })).status, 200);
    for (const [iface, circuit] of [['rest', '1_01'], ['json', '1_02'], ['bulk', '1_03'], ['rpc', '1_04']] as const) {
      const entry = await entryMatching((e) => e.interface === iface && e.target === `do/${circuit}`);
      assert.equal(entry.who, 'scada');
      assert.equal(entry.from, '127.0.0.1');
      assert.equal(entry.result, 'ok');
      assert.ok(!Number.isNaN(Date.parse(entry.ts)));
      assert.equal(Number(entry.params['value']), 1);
    }
    const writes = (await audit('?limit=1000')).filter((e) => e.target === 'do/1_01');
    assert.equal(writes.length, 1, 'exactly one entry per write');
  });

  test('a refused write is recorded with its reason; a refused token too, without the token', async () => {
    const reply = await httpCall(daemon.baseUrl, '/json/do/1_04', { method: 'POST', headers: { 'Content-Type': 'application/json', ...bearer(SCADA) }, body: '{"value": "on"}' });
    assert.equal(reply.status, 400);
    const refused = await entryMatching((e) => e.target === 'do/1_04' && e.params['value'] === 'on');
    assert.match(refused.result, /^refused: 400 /);
    const forbidden = await httpCall(daemon.baseUrl, '/rest/do/1_06', { method: 'POST', headers: { ...FORM, ...bearer(VIEWER) }, body: 'value=1' });
    assert.equal(forbidden.status, 403);
    const byViewer = await entryMatching((e) => e.interface === 'http' && e.target === '/rest/do/1_06');
    assert.equal(byViewer.who, 'viewer');
    assert.match(byViewer.result, /^refused: 403 /);
    await httpCall(daemon.baseUrl, '/rest/do/1_07?token=secret-in-the-query', { method: 'POST', headers: FORM, body: 'value=1' });
    const anonymous = await entryMatching((e) => e.target === '/rest/do/1_07');
    assert.equal(anonymous.who, 'anonymous');
    assert.match(anonymous.result, /^refused: 401 /);
    // Entries not yet flushed are in the answer; those flushed are in the file (if a flush came yet).
    const onDisk = existsSync(join(dir, 'audit.jsonl')) ? readFileSync(join(dir, 'audit.jsonl'), 'utf8') : '';
    assert.doesNotMatch(onDisk + JSON.stringify(await audit('?limit=1000')), /secret-in-the-query|scada-token/);
  });

  test('a WebSocket write names the token the client connected with', async () => {
    const client = await connect(`${daemon.baseUrl.replace('http', 'ws')}/ws?token=${SCADA}`);
    try {
      client.send({ cmd: 'set', dev: 'do', circuit: '1_01', value: 1 });
      const entry = await entryMatching((e) => e.interface === 'websocket');
      assert.equal(entry.who, 'scada');
      assert.equal(entry.target, 'do/1_01');
      assert.equal(entry.result, 'ok');
    } finally {
      await client.close();
    }
  });

  test('a reload is recorded with who asked; GET /audit needs admin scope and checks its query', async () => {
    assert.equal((await httpCall(daemon.baseUrl, '/config/reload', { method: 'POST', headers: bearer(ADMIN) })).status, 200);
    const reload = await entryMatching((e) => e.target === 'config');
    assert.equal(reload.who, 'anna');
    assert.match(reload.result, /^ok: configuration reloaded/);
    assert.equal((await httpCall(daemon.baseUrl, '/audit', { headers: bearer(SCADA) })).status, 403);
    assert.equal((await httpCall(daemon.baseUrl, '/audit')).status, 401);
    for (const query of ['?limit=0', '?limit=1001', '?limit=x', '?since=yesterday']) {
      const bad = await httpCall(daemon.baseUrl, `/audit${query}`, { headers: bearer(ADMIN) });
      assert.equal(bad.status, 400, query);
      assert.equal(bad.json.success, false);
    }
    const all = await audit('?limit=1000');
    assert.deepEqual(await audit('?limit=2'), all.slice(-2), 'without since: the latest entries');
    const since = Date.parse(all[1]!.ts);
    const after = await audit(`?since=${since}&limit=1`);
    assert.equal(after.length, 1);
    assert.ok(Date.parse(after[0]!.ts) > since);
  });

  test('after a SIGKILL mid-write and a torn last line, the log still reads and grows', async () => {
    const post = (circuit: string) => httpCall(daemon.baseUrl, `/rest/do/${circuit}`, { method: 'POST', headers: { ...FORM, ...bearer(SCADA) }, body: 'value=0' });
    await post('1_01');
    await entryMatching((e) => e.target === 'do/1_01' && e.params['value'] === '0');
    // Flushed once a second: wait for it to be on disk.
    for (const deadline = Date.now() + 5000; !readFileSync(join(dir, 'audit.jsonl'), 'utf8').includes('"value":"0"') && Date.now() < deadline; ) await new Promise((resolve) => setTimeout(resolve, 50));
    post('1_02').catch(() => undefined);
    daemon.child.kill('SIGKILL');
    await once(daemon.child, 'exit');
    // A power cut in the middle of a line.
    const { appendFileSync } = await import('node:fs');
    appendFileSync(join(dir, 'audit.jsonl'), '{"ts":"2026-01-01T00:00:00.000Z","who":"tor');
    daemon = await spawnDaemon(['--config', file], { cwd: dir });
    const before = await audit('?limit=1000');
    assert.ok(before.some((e) => e.target === 'do/1_01' && e.params['value'] === '0'), 'entries flushed before the kill survive');
    assert.ok(!before.some((e) => e.who === 'tor'));
    await post('1_03');
    await entryMatching((e) => e.target === 'do/1_03' && e.params['value'] === '0');
    await daemon.stop();
    const lines = readFileSync(join(dir, 'audit.jsonl'), 'utf8').split('\n').filter((line) => line !== '');
    const last = JSON.parse(lines.at(-1)!) as Entry;
    assert.equal(last.target, 'do/1_03', 'the entry after the torn line starts a line of its own');
    daemon = await spawnDaemon(['--config', file], { cwd: dir });
  });
});
