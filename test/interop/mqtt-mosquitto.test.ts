import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { writeMqttConfig } from '../helpers/mqtt-gateway.js';
import { Mosquitto, sleep, type Subscriber } from '../helpers/mosquitto.js';
import { spawnDaemon, type SpawnedDaemon } from '../helpers/spawn-daemon.js';
import { tempDir } from '../helpers/temp-dir.js';

// iogate against Eclipse Mosquitto, watched and commanded only through the
// mosquitto_sub and mosquitto_pub command-line clients.

let mosquitto: Mosquitto;
let daemon: SpawnedDaemon;
let watcher: Subscriber;

const retainedOn = (topic: string) => mosquitto.retainedOn(topic);
const publish = (topic: string, message: string) => mosquitto.publish(topic, message);

async function httpState(circuit: string): Promise<Record<string, unknown>> {
  return (await (await fetch(`${daemon.apiUrl}/rest/do/${circuit}`)).json()) as Record<string, unknown>;
}

before(async () => {
  mosquitto = await Mosquitto.start();
  watcher = mosquitto.subscribe('interop/#');
  // As users run it: MQTT 5, which Mosquitto speaks.
  daemon = await spawnDaemon(['--config', writeMqttConfig({ port: mosquitto.port, clientId: 'interop', protocol: 'auto' })]);
  await watcher.waitFor('interop/status', (payload) => payload === 'online');
});

after(async () => {
  watcher?.close();
  await daemon?.stop('SIGKILL');
  await mosquitto?.stop();
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
    const gate = await spawnDaemon(['--config', writeMqttConfig({ port: mosquitto.port, clientId: prefix, protocol })], { nodeOptions: unitNodeOptions() });
    // Not the command topics: mosquitto_sub would hand the test the 50 MB too.
    const acks = mosquitto.subscribe([`${prefix}/ack/#`, `${prefix}/status`]);
    const file = join(tempDir('iogate-mqtt-big-'), 'command.json');
    writeFileSync(file, `{"value": 1, "pad": "${'x'.repeat(50 * 1024 * 1024)}"}`);
    try {
      await acks.waitFor(`${prefix}/status`, (payload) => payload === 'online');
      const pid = gate.child.pid!;
      const quiet = await peakRss(pid, () => sleep(1000));
      const peak = await peakRss(pid, async () => {
        await mosquitto.pub(['-t', `${prefix}/cmd/do/1_01`, '-f', file]);
        await mosquitto.pub(['-t', `${prefix}/cmd/do/1_02`, '-m', 'ON']);
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
    const gate = await spawnDaemon(['--config', writeMqttConfig({ port: mosquitto.port, clientId: `${prefix}r`, protocol })]);
    const acks = mosquitto.subscribe([`${prefix}r/ack/#`, `${prefix}r/status`]);
    try {
      await acks.waitFor(`${prefix}r/status`, (payload) => payload === 'online');
      await mosquitto.pub(['-r', '-t', `${prefix}r/cmd/do/1_03`, '-m', '1']);
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
      await mosquitto.pub(['-r', '-n', '-t', `${prefix}r/cmd/do/1_03`]);
      acks.close();
      await gate.stop();
    }
  });
}

test('the broker stopped for a while and restarted holds the final states', async () => {
  await mosquitto.stop();
  for (const [circuit, values] of [['1_02', [1, 0, 1]], ['1_03', [1, 0]], ['1_04', [0, 1, 1]]] as const) {
    for (const value of values) {
      const response = await fetch(`${daemon.apiUrl}/rest/do/${circuit}`, { method: 'POST', body: new URLSearchParams({ value: String(value) }) });
      assert.equal(response.status, 200, 'writes go on without the broker');
    }
  }
  await sleep(1500);
  await mosquitto.restart();
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
  const watcherAfterRestart = mosquitto.subscribe('interop/status');
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
