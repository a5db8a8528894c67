// `npm run bench:sparkplug`: the Sparkplug B edge node's costs, as ratios and
// counts against a baseline in the same run (the machine may be shared).
//
//   node --import tsx bench/sparkplug.mjs      (after node build.mjs; needs /usr/sbin/mosquitto)
//
// 1. Births: NBIRTH + every DBIRTH with bench/config.yaml (530 devices), size
//    in bytes and time from the rebirth request to the last DBIRTH at a host.
// 2. Input change → DDATA at a host, p50/p99, with 0 and 2 CPU hogs: the
//    simulator stamps the register write (CLOCK_MONOTONIC), the host stamps
//    the DDATA's arrival (the same clock), as bench/input-latency.mjs does.
// 3. CPU at 50 Hz scans: the same daemon with apis.sparkplug on and off,
//    both running at once, CPU time over the same idle window.
// 4. Store-and-forward memory per 10,000 buffered changes (heap, after gc).
//
// The host decodes with Eclipse Tahu's codec (sparkplug-payload), never ours.
//
// Environment:
//   BENCH_SAMPLES   input flips per hog count (default 300)
//   BENCH_IDLE_S    seconds of the CPU window (default 30)
//   BENCH_BIRTHS    rebirths timed (default 20)
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { connectAsync } from 'mqtt';
import sparkplug from 'sparkplug-payload';
import { BENCH_DIR, RESULTS, fmt, freePort, log, percentiles, positive, runSeconds, spawnDaemon, startContentionBoards, stop, waitForAnswer, tempDir } from './common.mjs';

const tahu = sparkplug.get('spBv1.0');
const SAMPLES = positive('BENCH_SAMPLES', 300);
const IDLE_S = positive('BENCH_IDLE_S', 30);
const BIRTHS = positive('BENCH_BIRTHS', 20);
/** input_scan_frequency of the board whose input flips, as in bench/input-latency.mjs (0: scans only). */
const INPUT_HZ = Number(process.env.BENCH_INPUT_HZ ?? 500);
const GROUP = 'bench';
const children = new Set();
process.on('exit', () => children.forEach((child) => child.kill('SIGKILL')));

const sparkplugSection = (url, node) => `  sparkplug:
    enabled: true
    group_id: ${GROUP}
    edge_node_id: ${node}
    servers:
      - url: ${url}
    write: true
`;

/** bench/config.yaml with an `apis:` section prepended (its own has none). */
function benchConfig(name, apis) {
  const dir = tempDir(`iogate-spb-${name}-`);
  const file = join(dir, 'config.yaml');
  const base = readFileSync(join(BENCH_DIR, 'config.yaml'), 'utf8');
  if (/^apis:/m.test(base)) throw new Error('bench/config.yaml has an apis: section; merge by hand');
  writeFileSync(file, `alias_file: ${join(dir, 'alias.yaml')}\napis:\n${apis}${base}`);
  return file;
}

async function startMosquitto() {
  const port = await freePort();
  const dir = tempDir('iogate-spb-mosq-');
  writeFileSync(join(dir, 'm.conf'), `listener ${port} 127.0.0.1\nallow_anonymous true\npersistence false\n`);
  const child = spawn('/usr/sbin/mosquitto', ['-c', join(dir, 'm.conf')], { stdio: 'ignore' });
  children.add(child);
  for (let i = 0; i < 200; i++) {
    try {
      const probe = await connectAsync(`mqtt://127.0.0.1:${port}`, { reconnectPeriod: 0 });
      await probe.endAsync();
      return { child, url: `mqtt://127.0.0.1:${port}` };
    } catch {
      await sleep(25);
    }
  }
  throw new Error('mosquitto did not start');
}

/** A host: arrival time (ns, monotonic) taken before decoding. */
async function startHost(url) {
  const client = await connectAsync(url, { reconnectPeriod: 0 });
  const listeners = new Set();
  client.on('message', (topic, payload) => {
    const at = process.hrtime.bigint();
    for (const listener of listeners) listener(topic, payload, at);
  });
  await client.subscribeAsync(`spBv1.0/${GROUP}/#`, { qos: 0 });
  return { client, listen: (fn) => (listeners.add(fn), () => listeners.delete(fn)) };
}

function rebirth(host, node) {
  const payload = tahu.encodePayload({ timestamp: Date.now(), metrics: [{ name: 'Node Control/Rebirth', type: 'Boolean', value: true }] });
  return host.client.publishAsync(`spBv1.0/${GROUP}/NCMD/${node}`, Buffer.from(payload));
}

async function births(broker) {
  const node = 'births';
  const port = await freePort();
  const daemon = spawnDaemon(benchConfig('births', sparkplugSection(broker.url, node)), port);
  children.add(daemon.child);
  await waitForAnswer(port, '/rest/all', daemon.child);
  const host = await startHost(broker.url);
  const rows = [];
  for (let i = 0; i < BIRTHS + 2; i++) {
    let bytes = 0;
    let messages = 0;
    let metrics = 0;
    let devices = 0;
    const start = process.hrtime.bigint();
    let last = start;
    const expected = await new Promise((resolve) => {
      const off = host.listen((topic, payload, at) => {
        if (!topic.includes(`/NBIRTH/${node}`) && !topic.includes(`/DBIRTH/${node}/`)) return;
        bytes += payload.length;
        messages++;
        last = at;
        const decoded = tahu.decodePayload(payload);
        metrics += decoded.metrics.length;
        if (topic.includes('/DBIRTH/')) devices++;
      });
      setTimeout(() => {
        off();
        resolve();
      }, 1500);
      void rebirth(host, node);
    });
    void expected;
    if (i >= 2) rows.push({ bytes, messages, metrics, devices, ms: Number(last - start) / 1e6 });
  }
  await host.client.endAsync();
  await stop(daemon.child);
  const times = percentiles(rows.map((row) => row.ms));
  return { ...rows[0], p50: times.p50, p99: times.p99, runs: rows.length };
}

async function latency(broker, hogs) {
  const node = 'latency';
  const { simA, simB, config } = await startContentionBoards({ name: 'spb-latency', scanHz: 50, inputHz: INPUT_HZ, wsClients: 1 });
  children.add(simA.child).add(simB.child);
  writeFileSync(config, readFileSync(config, 'utf8').replace('apis:\n', `apis:\n${sparkplugSection(broker.url, node)}`));
  const port = await freePort();
  const daemon = spawnDaemon(config, port);
  children.add(daemon.child);
  await waitForAnswer(port, '/rest/di/1_01', daemon.child);
  const host = await startHost(broker.url);
  // The alias of di/1_01/value from the DBIRTH of device 1.
  const alias = await new Promise((resolve) => {
    const off = host.listen((topic, payload) => {
      if (!topic.endsWith(`/DBIRTH/${node}/1`)) return;
      const metric = tahu.decodePayload(payload).metrics.find((m) => m.name === 'di/1_01/value');
      off();
      resolve(Number(metric.alias));
    });
    void rebirth(host, node);
  });
  const hogProcesses = Array.from({ length: hogs }, () => spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' }));
  for (const hog of hogProcesses) children.add(hog);
  await sleep(1000);
  const samples = [];
  const afterRead = [];
  let value = 0;
  for (let i = -20; i < SAMPLES; i++) {
    value ^= 1;
    const arrived = new Promise((resolve) => {
      const off = host.listen((topic, payload, at) => {
        if (!topic.endsWith(`/DDATA/${node}/1`)) return;
        const hit = tahu.decodePayload(payload).metrics.some((m) => Number(m.alias) === alias && m.value === (value === 1));
        if (!hit) return;
        off();
        resolve(at);
      });
    });
    const delay = 5 + Math.floor(Math.random() * 20);
    await fetch(`${simA.controlUrl}/registers`, { method: 'POST', body: JSON.stringify({ unit: 1, space: 'holding', address: 0, values: [value], delayMs: delay }) });
    const at = await Promise.race([arrived, sleep(3000).then(() => undefined)]);
    if (at === undefined) throw new Error('no DDATA for a flip within 3 s');
    const { at: changedAt, readAt } = await (await fetch(`${simA.controlUrl}/changes?unit=1`)).json();
    if (i < 0) continue;
    samples.push(Number(at - BigInt(changedAt)) / 1e6);
    // The edge node's own part: from the daemon's read that saw the change to the host.
    if (readAt !== null) afterRead.push(Number(at - BigInt(readAt)) / 1e6);
  }
  for (const hog of hogProcesses) hog.kill('SIGKILL');
  await host.client.endAsync();
  await Promise.all([stop(daemon.child), stop(simA.child), stop(simB.child)]);
  return { hogs, ...percentiles(samples), afterRead: percentiles(afterRead) };
}

async function cpu(broker) {
  const portOn = await freePort();
  const portOff = await freePort();
  const on = spawnDaemon(benchConfig('cpu-on', sparkplugSection(broker.url, 'cpu')), portOn);
  const off = spawnDaemon(benchConfig('cpu-off', ''), portOff);
  children.add(on.child).add(off.child);
  await Promise.all([waitForAnswer(portOn, '/rest/all', on.child), waitForAnswer(portOff, '/rest/all', off.child)]);
  // Past start-up compilation and collections.
  await sleep(12_000);
  const before = { on: runSeconds(on.child.pid), off: runSeconds(off.child.pid) };
  await sleep(IDLE_S * 1000);
  const after = { on: runSeconds(on.child.pid), off: runSeconds(off.child.pid) };
  const metricsText = await (await fetch(`http://127.0.0.1:${portOn}/metrics`)).text();
  const dataMessages = Number(/iogate_sparkplug_data_messages_total (\d+)/.exec(metricsText)?.[1] ?? NaN);
  await Promise.all([stop(on.child), stop(off.child)]);
  const pct = (key) => ((after[key] - before[key]) / IDLE_S) * 100;
  return { seconds: IDLE_S, onPct: pct('on'), offPct: pct('off'), extraPct: pct('on') - pct('off'), ratio: pct('on') / pct('off'), dataMessages };
}

async function bufferMemory() {
  const child = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', '-e', `
    const { StoreForward } = await import(${JSON.stringify(new URL('../src/api/sparkplug/store-forward.ts', import.meta.url).href)});
    const buffer = new StoreForward({ memoryMb: 64, maxAgeS: 86400, edgeNodeKey: 'bench', log: () => {} });
    const names = Array.from({ length: 500 }, (_, i) => 'di/' + i + '/value');
    gc(); gc();
    const before = process.memoryUsage().heapUsed;
    const count = 100000;
    for (let i = 0; i < count; i++) buffer.push({ device: String(i % 5), name: names[i % 500], datatype: 11, value: i % 2 === 0, timestamp: Date.now() });
    gc(); gc();
    const after = process.memoryUsage().heapUsed;
    process.stdout.write(JSON.stringify({ per10k: (after - before) / (count / 10000), depth: buffer.depth }));
  `], { stdio: ['ignore', 'pipe', 'inherit'], cwd: new URL('..', import.meta.url).pathname });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (chunk) => (out += chunk));
  await once(child, 'exit');
  return JSON.parse(out);
}

const date = new Date().toISOString();
const loadBefore = loadavg()[0];
const broker = await startMosquitto();
log('births…');
const birth = await births(broker);
log(`births: ${birth.messages} messages, ${birth.bytes} bytes, ${birth.metrics} metrics, p50 ${fmt(birth.p50, 1)} ms`);
const latencies = [];
for (const hogs of [0, 2]) {
  log(`latency with ${hogs} hogs…`);
  latencies.push(await latency(broker, hogs));
  log(`  p50 ${fmt(latencies.at(-1).p50, 2)} / p99 ${fmt(latencies.at(-1).p99, 2)} ms`);
}
log('CPU on/off…');
const cost = await cpu(broker);
log(`  on ${fmt(cost.onPct, 2)} %, off ${fmt(cost.offPct, 2)} %`);
const memory = await bufferMemory();
await stop(broker.child);

const report = { date, node: process.version, inputHz: INPUT_HZ, loadBefore, loadAfter: loadavg()[0], birth, latencies, cost, memory };
const md = `# Sparkplug B edge node

${date} · Node ${process.version} · load average ${fmt(report.loadBefore, 2)} before, ${fmt(report.loadAfter, 2)} after · mosquitto on loopback · the host decodes with Tahu's codec

| Measure | Value |
| --- | ---: |
| NBIRTH + DBIRTHs (bench/config.yaml, ${birth.devices} Sparkplug devices, ${birth.metrics} metrics) | ${birth.messages} messages, ${fmt(birth.bytes)} bytes |
| rebirth request → last DBIRTH at the host, p50 / p99 (${birth.runs} rebirths) | ${fmt(birth.p50, 1)} / ${fmt(birth.p99, 1)} ms |
${latencies.map((row) => `| input change → DDATA at the host, ${row.hogs} CPU hogs, p50 / p99 / max (${row.count} flips, inputs read at ${INPUT_HZ} Hz) | ${fmt(row.p50, 2)} / ${fmt(row.p99, 2)} / ${fmt(row.max, 2)} ms |\n| … of which the daemon's read → DDATA at the host, p50 / p99 | ${fmt(row.afterRead.p50, 2)} / ${fmt(row.afterRead.p99, 2)} ms |`).join('\n')}
| CPU at 50 Hz scans over ${cost.seconds} s, sparkplug on / off (same run) | ${fmt(cost.onPct, 2)} % / ${fmt(cost.offPct, 2)} % of a core (${fmt(cost.ratio, 2)}×; ${fmt(cost.extraPct, 2)} points extra; ${cost.dataMessages} DATA messages) |
| store-and-forward heap per 10,000 buffered changes | ${fmt(memory.per10k / 1024, 0)} KiB (${fmt(memory.per10k / 10000, 0)} bytes each) |
`;
writeFileSync(join(RESULTS, 'sparkplug.json'), JSON.stringify(report, null, 2) + '\n');
writeFileSync(join(RESULTS, 'sparkplug.md'), md);
process.stdout.write(md);
process.exit(0);
