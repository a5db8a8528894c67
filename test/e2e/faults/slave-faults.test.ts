import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { brain00 } from '../../../src/boards/builtin/neuron.js';
import { CycleGuard } from '../../../src/devices/slave/cycle-guard.js';
import { UNTHROTTLED_GAP_MS } from '../../../src/devices/slave/scan-loop.js';
import { Simulation } from '../../../src/sim/simulation.js';
import { modbusTcpServer } from '../../../src/sim/tcp-server.js';
import { TcpLink } from '../../../src/transport/tcp-link.js';
import type { ModbusBus } from '../../../src/modbus/bus.js';
import { startBrainsOnFaultyLine, startRig, type Rig } from '../../helpers/bus-rig.js';
import { FaultyLine } from '../../helpers/faulty-line.js';
import { FaultyProxy } from '../../helpers/faulty-proxy.js';
import { connect } from '../../helpers/ws-client.js';

// Faults stay with the slave that has them: writes to an offline slave fail
// at once without touching the line, a slave that answers part of its
// requests is degraded but keeps updating, a gateway that drops the
// connection over one unit charges only that unit, and the log says each of
// these once. Asserted with counts and order, never with durations.

/** Two brain boards named '1' and '2' on one in-memory line, both online. */
async function twoSlaves(options = {}): Promise<{ line: FaultyLine; rig: Rig }> {
  return startBrainsOnFaultyLine(['1', '2'], { timeoutMs: 60, ...options });
}

/**
 * Slave 1 answers 100 ms late and a first write to DO 1_01 holds the line; a
 * second write (queued by `queueAndLeave`, whose client then leaves) must
 * never reach the wire: the line hears only the first, and the bus counts
 * one dropped request.
 */
async function leavingWhileQueued(queueAndLeave: (rig: Rig, bus: ModbusBus) => Promise<void>): Promise<Rig> {
  const { line, rig } = await twoSlaves({ timeoutMs: 1000 });
  try {
    line.replyDelayMs.set(1, 100);
    const bus = rig.buses[0]!;
    const first = rig.post('/rest/do/1_01', { value: '1' });
    await waitUntil(() => (line.heardWrites.get(1) ?? 0) === 1);
    await queueAndLeave(rig, bus);
    await waitUntil(() => bus.queuedWrites === 0);
    assert.equal((await first).status, 200);
    await rig.scans('1', 2);
    assert.equal(line.heardWrites.get(1), 1, 'the abandoned write never reached the wire');
    assert.equal(bus.stats().dropped, 1);
    return rig;
  } catch (error) {
    await rig.stop();
    throw error;
  }
}

test('writes to an offline slave answer 503 at once and never reach the wire; its neighbour keeps scanning; a probe brings writes back', async () => {
  // Generous timeouts: four clients in this process load the event loop that also delivers the replies.
  const { line, rig } = await twoSlaves({ timeoutMs: 300 });
  try {
    line.silent.add(2);
    await rig.whenState('2', 'offline');
    const neighbour = rig.slave('1');
    const failedBefore = neighbour.stats.failedScans;
    let done = false;
    const neighbourScans = rig.scans('1', 25).then(() => (done = true));
    const statuses = new Map<number, number>();
    const kinds = new Set<string>();
    // Four clients hammer the offline slave until the neighbour completed 25 scans.
    await Promise.all(
      [1, 2, 3, 4].map(async () => {
        while (!done) {
          const reply = await rig.post('/rest/do/2_01', { value: '1' });
          statuses.set(reply.status, (statuses.get(reply.status) ?? 0) + 1);
          for (const kind of Object.keys(JSON.parse(reply.body).errors ?? {})) kinds.add(kind);
        }
      }),
    );
    await neighbourScans;
    assert.deepEqual([...statuses.keys()], [503]);
    assert.ok(statuses.get(503)! >= 4, `${statuses.get(503)} writes answered`);
    assert.deepEqual([...kinds], ['ModbusSlaveOffline']);
    assert.equal(line.heardWrites.get(2) ?? 0, 0, 'no write reached the wire while the slave was offline');
    assert.equal(neighbour.stats.failedScans, failedBefore);
    assert.equal(neighbour.state, 'online');

    // The same through bulk (200 writes in one request) and RPC.
    const assignments = Array.from({ length: 200 }, (_, i) => ({ device_type: 'do', device_circuit: '2_01', assigned_values: { value: i % 2 } }));
    const bulk = await fetch(`${rig.baseUrl}/bulk`, { method: 'POST', body: JSON.stringify({ individual_assignments: assignments }) });
    const items = JSON.parse(await bulk.text()).individual_assignments as Array<{ errors?: Record<string, string> }>;
    assert.equal(items.length, 200);
    assert.ok(items.every((item) => item.errors?.['ModbusSlaveOffline']), JSON.stringify(items[0]));
    const rpc = await fetch(`${rig.baseUrl}/rpc`, {
      method: 'POST',
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'do_set', params: ['2_01', 1] }),
    });
    const rpcReply = await rpc.text();
    assert.ok(JSON.parse(rpcReply).error, rpcReply);
    assert.equal(line.heardWrites.get(2) ?? 0, 0);

    line.silent.delete(2);
    await rig.whenState('2', 'online');
    const reply = await rig.post('/rest/do/2_01', { value: '1' });
    assert.equal(reply.status, 200);
    assert.equal(line.heardWrites.get(2), 1);
  } finally {
    await rig.stop();
  }
});

test('an HTTP write whose client hung up while it waited for the line is never sent', async () => {
  const rig = await leavingWhileQueued(async (rig, bus) => {
    const leaving = new AbortController();
    const second = fetch(`${rig.baseUrl}/rest/do/1_02`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: 'value=1',
      signal: leaving.signal,
    }).catch((error: Error) => error.name);
    await waitUntil(() => bus.queuedWrites === 1);
    leaving.abort();
    assert.equal(await second, 'AbortError');
  });
  try {
    assert.match((await rig.get('/metrics')).body, /iogate_bus_dropped_requests_total\{bus="bus1"\} 1/);
  } finally {
    await rig.stop();
  }
});

test('a bulk request whose client hung up sends none of its remaining writes', async () => {
  const { line, rig } = await twoSlaves({ timeoutMs: 1000 });
  try {
    line.replyDelayMs.set(1, 50);
    const leaving = new AbortController();
    const assignments = Array.from({ length: 20 }, (_, i) => ({ device_type: 'do', device_circuit: '1_01', assigned_values: { value: i % 2 } }));
    const bulk = fetch(`${rig.baseUrl}/bulk`, {
      method: 'POST',
      body: JSON.stringify({ individual_assignments: assignments }),
      signal: leaving.signal,
    }).catch((error: Error) => error.name);
    await waitUntil(() => (line.heardWrites.get(1) ?? 0) === 1);
    leaving.abort();
    assert.equal(await bulk, 'AbortError');
    // Long enough for the 19 others, had they gone on: each takes 50 ms of line time.
    await rig.scans('1', 25);
    assert.ok(line.heardWrites.get(1)! <= 2, `${line.heardWrites.get(1)} of 20 writes went on the wire after the client left`);
    assert.ok(rig.buses[0]!.stats().dropped >= 18, `${rig.buses[0]!.stats().dropped} dropped`);
  } finally {
    await rig.stop();
  }
});

test('a WebSocket set whose client closed while it waited for the line is never sent', async () => {
  const rig = await leavingWhileQueued(async (rig, bus) => {
    const client = await connect(rig.wsUrl);
    client.send({ cmd: 'set', dev: 'do', circuit: '1_02', value: 1 });
    await waitUntil(() => bus.queuedWrites === 1);
    await client.close();
  });
  await rig.stop();
});

test('a slave that loses 30 % of its replies stays degraded, never offline, and its values keep refreshing', async () => {
  const { line, rig } = await twoSlaves();
  try {
    line.lossy.set(2, 0.3);
    const lossy = rig.slave('2');
    await rig.whenState('2', 'degraded');
    const transitionsBefore = rig.transitions.length;
    let scans = 0;
    let refreshed = 0;
    let lastRead = lossy.cache.blocks[0]!.readAt;
    const sampler = () => {
      scans++;
      if (lossy.cache.blocks[0]!.readAt !== lastRead) refreshed++;
      lastRead = lossy.cache.blocks[0]!.readAt;
    };
    const scan = lossy.scan.bind(lossy);
    lossy.scan = async (now) => {
      await scan(now);
      sampler();
    };
    await rig.scans('2', 150);
    assert.equal(lossy.state, 'degraded');
    assert.deepEqual(rig.transitions.slice(transitionsBefore), [], 'the state stayed degraded');
    assert.ok(!rig.transitions.some((change) => change.state === 'offline'), 'never shown offline');
    assert.ok(refreshed / scans >= 0.5, `values refreshed in ${refreshed} of ${scans} scans`);
    assert.equal(rig.slave('1').state, 'online');
    assert.equal(rig.slave('1').stats.failedScans, 0);

    const { status, body } = await rig.get('/rest/modbus_slave/2');
    assert.equal(status, 200);
    const shown = JSON.parse(body);
    assert.equal(shown.state, 'degraded');
    assert.equal(shown.online, true);
    assert.ok(shown.success_ratio > 0.4 && shown.success_ratio < 0.9, `success_ratio ${shown.success_ratio}`);
    assert.equal(typeof shown.stale_s, 'number');
    assert.equal((await rig.get('/rest/do/2_01')).status, 200, 'a degraded slave\'s devices stay readable');
    const metrics = (await rig.get('/metrics')).body;
    assert.match(metrics, /iogate_slave_degraded\{bus="bus1",slave="2",unit="2"\} 1/);
    assert.match(metrics, /iogate_slave_success_ratio\{bus="bus1",slave="2",unit="2"\} 0\.\d+/);
    assert.match(metrics, /iogate_slave_stale_seconds\{bus="bus1",slave="2",unit="2"\} \d/);

    line.lossy.delete(2);
    await rig.whenState('2', 'online');
    assert.deepEqual(
      rig.logs.filter((line) => line.includes("slave '2'")).map((line) => line.split(' ').slice(0, 1).join() + ' ' + /is (\w+)/.exec(line)![1]),
      ['warn degraded', 'info online'],
      'one log line per transition',
    );
  } finally {
    await rig.stop();
  }
});

test('a TCP gateway that drops the connection whenever one unit is asked charges only that unit', async () => {
  const simulation = new Simulation([1, 2, 3].map((unit) => ({ unit, model: brain00 })), 0);
  const server = modbusTcpServer(simulation.boards);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const proxy = await FaultyProxy.start({ host: '127.0.0.1', port: (server.address() as AddressInfo).port });
  const rig = await startRig([
    {
      link: new TcpLink('127.0.0.1', proxy.port),
      slaves: ['1', '2', '3'].map((name) => ({ name, unit: Number(name), model: brain00, periodMs: 20 })),
      options: { timeoutMs: 100 },
    },
  ]);
  try {
    await Promise.all(['1', '2', '3'].map((name) => rig.whenState(name, 'online')));
    const failed = ['1', '2'].map((name) => rig.slave(name).stats.failedScans);
    const transitionsBefore = rig.transitions.length;
    proxy.closeOn.add(3);
    await rig.whenState('3', 'offline');
    // Through several more drops (slave 3's probes), its neighbours keep scanning.
    const closes = proxy.closes;
    await Promise.all([rig.scans('1', 40), rig.scans('2', 40)]);
    await waitUntil(() => proxy.closes > closes);
    assert.ok(proxy.closes >= 2, `${proxy.closes} closes`);
    assert.deepEqual(
      rig.transitions.slice(transitionsBefore).filter((change) => change.name !== '3'),
      [],
      'slaves 1 and 2 never left online',
    );
    assert.deepEqual(['1', '2'].map((name) => rig.slave(name).stats.failedScans), failed, 'no failed scan charged to them');
    assert.ok(rig.slave('1').stats.scans > 40 && rig.slave('2').stats.scans > 40, 'neighbours scanned');
    assert.equal(rig.slave('3').state, 'offline');
  } finally {
    await rig.stop();
    await proxy.stop();
    server.close();
  }
});

test('slave and bus outages log one line when they start and one when they end, whatever the attempts between', async () => {
  const { line, rig } = await twoSlaves();
  try {
    line.silent.add(2);
    await rig.whenState('2', 'offline');
    const slave = rig.slave('2');
    const failed = slave.stats.failedScans;
    await rig.afterScanWhen('2', () => slave.stats.failedScans >= failed + 2, 20_000);
    line.silent.delete(2);
    await rig.whenState('2', 'online');
    const slaveLines = rig.logs.filter((entry) => entry.includes("slave '2'"));
    assert.equal(slaveLines.length, 2, slaveLines.join('\n'));
    assert.match(slaveLines[0]!, /^warn .* is offline: slave 2 did not answer/);
    assert.match(slaveLines[1]!, /^info .* is back online after \d+ s \(\d+ probes\)/);

    line.refuseOpen = true;
    line.vanish();
    const bus = rig.buses[0]!;
    await waitUntil(() => bus.stats().reconnects >= 5);
    line.refuseOpen = false;
    await rig.whenState('1', 'online');
    await waitUntil(() => bus.isConnected);
    const busLines = rig.logs.filter((entry) => /^\w+ bus bus1:/.test(entry));
    assert.equal(busLines.length, 2, busLines.join('\n'));
    assert.match(busLines[0]!, /^warn bus bus1: device vanished; reconnecting with back-off/);
    assert.match(busLines[1]!, /^info bus bus1: reconnected to faulty-line after \d+ s and \d+ attempts/);
  } finally {
    await rig.stop();
  }
});

test('scan_frequency 0 scans as often as the line allows, with a pause between scans', async () => {
  const rig = await startRig([{ link: new FaultyLine([{ unit: 1, model: brain00 }]), slaves: [{ name: '1', unit: 1, model: brain00, periodMs: 0 }] }]);
  try {
    await rig.whenState('1', 'online');
    const started = performance.now();
    const scansBefore = rig.slave('1').stats.scans;
    await rig.scans('1', 100);
    const elapsed = performance.now() - started;
    const scans = rig.slave('1').stats.scans - scansBefore;
    // A timer pause between scans: never more than one scan per pause, however fast the machine.
    assert.ok(scans <= elapsed / UNTHROTTLED_GAP_MS + 1, `${scans} scans in ${elapsed.toFixed(1)} ms`);
  } finally {
    await rig.stop();
  }
});

test('the cycle time is in /metrics and a cycle over a quarter of a watchdog timeout is warned about once', async () => {
  const { rig } = await startBrainsOnFaultyLine(['1']);
  try {
    const warnings: string[] = [];
    const guard = new CycleGuard(rig.buses, rig.slaves, (level, message) => warnings.push(`${level} ${message}`));
    guard.check(true);
    assert.deepEqual(warnings, [], 'no enabled watchdog, nothing to say');
    assert.equal((await rig.post('/rest/wd/1_01', { value: '1', timeout: '40' })).status, 200);
    guard.check(true);
    assert.equal(warnings.length, 1);
    assert.match(warnings[0]!, /^warn bus bus1: scan cycle \(configured or measured\) of \d+ ms exceeds a quarter of the shortest watchdog timeout on it \(40 ms\)/);
    await rig.scans('1', 5);
    guard.check();
    assert.equal(warnings.length, 1, 'said once, not at every check');
    assert.equal((await rig.post('/rest/wd/1_01', { timeout: '1000' })).status, 200);
    guard.check();
    assert.match(warnings[1]!, /^info bus bus1: scan cycle back to \d+ ms/);
    const cycle = /iogate_bus_cycle_seconds\{bus="bus1"\} ([\d.e-]+)/.exec((await rig.get('/metrics')).body);
    assert.ok(cycle && Number(cycle[1]) > 0, `cycle ${cycle?.[1]} s measured`);
  } finally {
    await rig.stop();
  }
});

async function waitUntil(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 2));
}
