import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { connect, createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, test } from 'node:test';
import { writeMqttConfig } from '../helpers/mqtt-gateway.js';
import { spawnDaemon, type SpawnedDaemon } from '../helpers/spawn-daemon.js';

// iogate against Eclipse Mosquitto, watched and commanded only through the
// mosquitto_sub and mosquitto_pub command-line clients.

const MOSQUITTO = '/usr/sbin/mosquitto';
const run = promisify(execFile);

let port: number;
let broker: ChildProcess | undefined;
let confFile: string;
let daemon: SpawnedDaemon;
let watcher: Subscriber;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port: free } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return free;
}

async function startBroker(): Promise<void> {
  broker = spawn(MOSQUITTO, ['-c', confFile], { stdio: ['ignore', 'ignore', 'pipe'] });
  const deadline = Date.now() + 5000;
  while (Date.now() < deadline) {
    const accepting = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (accepting) return;
    await sleep(50);
  }
  throw new Error('mosquitto did not start listening');
}

async function stopBroker(): Promise<void> {
  if (!broker || broker.exitCode !== null) return;
  broker.kill('SIGTERM');
  await once(broker, 'exit');
  broker = undefined;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A running mosquitto_sub; lines are `topic<TAB>retain flag<TAB>payload`. */
class Subscriber {
  readonly lines: Array<{ topic: string; retained: boolean; payload: string }> = [];
  private readonly child: ChildProcess;

  constructor(filter: string | string[]) {
    const filters = (Array.isArray(filter) ? filter : [filter]).flatMap((one) => ['-t', one]);
    this.child = spawn('mosquitto_sub', ['-h', '127.0.0.1', '-p', String(port), '-q', '1', ...filters, '-F', '%t\t%r\t%p'], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    let buffered = '';
    this.child.stdout!.setEncoding('utf8');
    this.child.stdout!.on('data', (chunk: string) => {
      buffered += chunk;
      const lines = buffered.split('\n');
      buffered = lines.pop()!;
      for (const line of lines) {
        const [topic, retained, ...payload] = line.split('\t');
        this.lines.push({ topic: topic!, retained: retained === '1', payload: payload.join('\t') });
      }
    });
  }

  async waitFor(topic: string, accept: (payload: string) => boolean = () => true, timeoutMs = 10_000): Promise<{ retained: boolean; payload: string }> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.lines.find((line) => line.topic === topic && accept(line.payload));
      if (found) return found;
      if (Date.now() > deadline) {
        throw new Error(`mosquitto_sub saw no matching ${topic}; got ${JSON.stringify(this.lines.filter((line) => line.topic === topic))}`);
      }
      await sleep(25);
    }
  }

  forget(): void {
    this.lines.length = 0;
  }

  close(): void {
    this.child.kill();
  }
}

/** What a late mosquitto_sub gets as retained message on `topic`. */
async function retainedOn(topic: string): Promise<string> {
  const { stdout } = await run('mosquitto_sub', ['-h', '127.0.0.1', '-p', String(port), '-t', topic, '--retained-only', '-C', '1', '-W', '10']);
  return stdout.trim();
}

async function publish(topic: string, message: string): Promise<void> {
  await run('mosquitto_pub', ['-h', '127.0.0.1', '-p', String(port), '-q', '1', '-t', topic, '-m', message]);
}

async function httpState(circuit: string): Promise<Record<string, unknown>> {
  return (await (await fetch(`${daemon.apiUrl}/rest/do/${circuit}`)).json()) as Record<string, unknown>;
}

before(async () => {
  port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'iogate-mosquitto-'));
  confFile = join(dir, 'mosquitto.conf');
  writeFileSync(confFile, `listener ${port} 127.0.0.1\nallow_anonymous true\npersistence false\n`);
  await startBroker();
  watcher = new Subscriber('interop/#');
  // As users run it: MQTT 5, which Mosquitto speaks.
  daemon = await spawnDaemon(['--config', writeMqttConfig({ port, clientId: 'interop', protocol: 'auto' })]);
  await watcher.waitFor('interop/status', (payload) => payload === 'online');
});

after(async () => {
  watcher?.close();
  await daemon?.stop('SIGKILL');
  await stopBroker();
});

test('a late mosquitto_sub gets the retained state of every output', async () => {
  for (const circuit of ['1_01', '1_02', '1_03', '1_04']) {
    const state = JSON.parse(await retainedOn(`interop/event/do/${circuit}`));
    assert.equal(state.circuit, circuit);
    assert.equal(state.value, (await httpState(circuit))['value']);
  }
  assert.equal(await retainedOn('interop/status'), 'online');
});

test('a command from mosquitto_pub switches an output and is acknowledged', async () => {
  watcher.forget();
  await publish('interop/cmd/do/1_01', '{"value": 1}');
  const ack = JSON.parse((await watcher.waitFor('interop/ack/do/1_01')).payload);
  assert.equal(ack.success, true);
  assert.equal(ack.result.value, 1);
  assert.equal((await httpState('1_01'))['value'], 1, 'the HTTP API sees the output on');
  const event = await watcher.waitFor('interop/event/do/1_01', (payload) => JSON.parse(payload).value === 1);
  assert.equal(event.retained, false, 'live deliveries carry no retain flag');
  await publish('interop/cmd/output/1_01', 'OFF');
  await watcher.waitFor('interop/ack/output/1_01', (payload) => JSON.parse(payload).result?.value === 0);
  await publish('interop/cmd/do/1_01', 'nonsense');
  const refused = JSON.parse((await watcher.waitFor('interop/ack/do/1_01', (payload) => payload.includes('"success":false'))).payload);
  assert.ok(refused.errors.InvalidPayload);
});

/** node's options from the service unit's ExecStart line, so memory is measured as the service runs. */
function unitNodeOptions(): string[] {
  const unit = readFileSync(new URL('../../deploy/iogate.service', import.meta.url), 'utf8');
  const words = (/^ExecStart=(.*)$/m.exec(unit)?.[1] ?? '').trim().split(/\s+/);
  return words.slice(1, words.findIndex((word) => word.endsWith('.js'))).filter((word) => word.startsWith('--'));
}

function rssMb(pid: number): number {
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
}

/** The highest RSS of `pid` while `during` runs, sampled every 10 ms. */
async function peakRss(pid: number, during: () => Promise<void>): Promise<number> {
  let peak = rssMb(pid);
  const sampler = setInterval(() => (peak = Math.max(peak, rssMb(pid))), 10);
  try {
    await during();
  } finally {
    clearInterval(sampler);
  }
  return Math.max(peak, rssMb(pid));
}

for (const protocol of ['5', '3.1.1'] as const) {
  const prefix = `v${protocol.replaceAll('.', '')}`;

  test(`MQTT ${protocol}: a 50 MB command publish keeps RSS within 1.5× quiet and switches nothing; the next command works`, async (t) => {
    const gate = await spawnDaemon(['--config', writeMqttConfig({ port, clientId: prefix, protocol })], { nodeOptions: unitNodeOptions() });
    // Not the command topics: mosquitto_sub would hand the test the 50 MB too.
    const acks = new Subscriber([`${prefix}/ack/#`, `${prefix}/status`]);
    const file = join(mkdtempSync(join(tmpdir(), 'iogate-mqtt-big-')), 'command.json');
    writeFileSync(file, `{"value": 1, "pad": "${'x'.repeat(50 * 1024 * 1024)}"}`);
    try {
      await acks.waitFor(`${prefix}/status`, (payload) => payload === 'online');
      const pid = gate.child.pid!;
      const quiet = await peakRss(pid, () => sleep(1000));
      const peak = await peakRss(pid, async () => {
        await run('mosquitto_pub', ['-h', '127.0.0.1', '-p', String(port), '-q', '1', '-t', `${prefix}/cmd/do/1_01`, '-f', file], { maxBuffer: 1024 * 1024 });
        await run('mosquitto_pub', ['-h', '127.0.0.1', '-p', String(port), '-q', '1', '-t', `${prefix}/cmd/do/1_02`, '-m', 'ON']);
        await acks.waitFor(`${prefix}/ack/do/1_02`, (payload) => JSON.parse(payload).success === true, 60_000);
      });
      t.diagnostic(`RSS: quiet ${quiet.toFixed(1)} MB, peak ${peak.toFixed(1)} MB (${(peak / quiet).toFixed(2)}×)`);
      assert.ok(peak <= quiet * 1.5, `peak RSS ${peak.toFixed(1)} MB against ${quiet.toFixed(1)} MB quiet`);
      const big = acks.lines.filter((line) => line.topic === `${prefix}/ack/do/1_01`);
      if (protocol === '5') {
        // The broker dropped it, as our Maximum Packet Size asks: nothing reached iogate to answer.
        assert.deepEqual(big, []);
      } else {
        assert.equal(big.length, 1);
        assert.match(JSON.parse(big[0]!.payload).errors.InvalidPayload, /exceeds/);
      }
      const state = (await (await fetch(`${gate.baseUrl}/rest/do/1_01`)).json()) as { value: number };
      assert.equal(state.value, 0, 'the output stayed off');
    } finally {
      acks.close();
      await gate.stop();
    }
  });

  test(`MQTT ${protocol}: a retained command published while iogate is connected is ${protocol === '5' ? 'refused' : 'carried out (3.1.1 cannot tell)'}`, async () => {
    const gate = await spawnDaemon(['--config', writeMqttConfig({ port, clientId: `${prefix}r`, protocol })]);
    const acks = new Subscriber([`${prefix}r/ack/#`, `${prefix}r/status`]);
    try {
      await acks.waitFor(`${prefix}r/status`, (payload) => payload === 'online');
      await run('mosquitto_pub', ['-h', '127.0.0.1', '-p', String(port), '-q', '1', '-r', '-t', `${prefix}r/cmd/do/1_03`, '-m', '1']);
      const ack = JSON.parse((await acks.waitFor(`${prefix}r/ack/do/1_03`)).payload);
      const state = (await (await fetch(`${gate.baseUrl}/rest/do/1_03`)).json()) as { value: number };
      if (protocol === '5') {
        assert.equal(ack.success, false);
        assert.ok(ack.errors.RetainedCommand);
        assert.equal(state.value, 0);
      } else {
        assert.equal(ack.success, true);
        assert.equal(state.value, 1);
      }
    } finally {
      await run('mosquitto_pub', ['-h', '127.0.0.1', '-p', String(port), '-q', '1', '-r', '-n', '-t', `${prefix}r/cmd/do/1_03`]);
      acks.close();
      await gate.stop();
    }
  });
}

test('the broker stopped for a while and restarted holds the final states', async () => {
  await stopBroker();
  for (const [circuit, values] of [['1_02', [1, 0, 1]], ['1_03', [1, 0]], ['1_04', [0, 1, 1]]] as const) {
    for (const value of values) {
      const response = await fetch(`${daemon.apiUrl}/rest/do/${circuit}`, { method: 'POST', body: new URLSearchParams({ value: String(value) }) });
      assert.equal(response.status, 200, 'writes go on without the broker');
    }
  }
  await sleep(1500);
  await startBroker();
  for (const [circuit, value] of [['1_02', 1], ['1_03', 0], ['1_04', 1]] as const) {
    const deadline = Date.now() + 15_000;
    let state: { value?: unknown } = {};
    while (Date.now() < deadline) {
      try {
        state = JSON.parse(await retainedOn(`interop/event/do/${circuit}`));
        if (state.value === value) break;
      } catch {
        // Not republished yet: iogate reconnects with back-off.
      }
      await sleep(200);
    }
    assert.equal(state.value, value, `do ${circuit}`);
  }
  assert.equal(await retainedOn('interop/status'), 'online');
});

test('the will is published when iogate is killed with SIGKILL', async () => {
  const watcherAfterRestart = new Subscriber('interop/status');
  try {
    await watcherAfterRestart.waitFor('interop/status', (payload) => payload === 'online');
    await daemon.stop('SIGKILL');
    const will = await watcherAfterRestart.waitFor('interop/status', (payload) => payload === 'offline');
    assert.equal(will.payload, 'offline');
    assert.equal(await retainedOn('interop/status'), 'offline');
  } finally {
    watcherAfterRestart.close();
  }
});
