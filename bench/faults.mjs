// Fault benchmark (run by hand: npm run bench:faults).
//
// iogate's bus engine, slaves and HTTP API, assembled as in the tests, on an
// in-memory RTU line whose replies take 5 ms (about one transaction's wire
// time at 19200 Bd) with the daemon's RTU defaults (200 ms timeout, 1 retry).
// Three neighbours and one target slave scan at 20 Hz. It measures:
//  1. the neighbours' scan rate with the target offline and 4 HTTP clients
//     writing to it in a loop (in a worker thread, as separate clients would),
//     as a share of their rate with nothing wrong and of their rate with the
//     target offline but no writers (same run, alternating rounds), and how
//     fast those writes are answered;
//  2. with the target losing 30 % of its replies: how often its values refresh
//     (scans in which its first block was read) against its configured 20 Hz,
//     and the share of time it is shown offline;
//  3. a target that answers 50 ms after its timeout, or with a wrong unit id:
//     the neighbours' scans per second, 10 s before the fault and 20 s after
//     it starts, and the lowest sum over any 10 s window against the 10 s
//     before (the window where the fault is detected is among them).
//     BENCH_MISBEHAVING=0 skips it.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { tsImport } from 'tsx/esm/api';

const root = fileURLToPath(new URL('..', import.meta.url));
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const WRITERS = 4;
const PERIOD_MS = 50;
const REPLY_MS = 5;

const load = (path) => tsImport(join(root, path), import.meta.url);
const { brain00 } = await load('src/boards/builtin/neuron.ts');
const { FaultyLine } = await load('test/helpers/faulty-line.ts');
const { startRig } = await load('test/helpers/bus-rig.ts');

const UNITS = [1, 2, 3, 4];
const TARGET = '4';
const neighbours = ['1', '2', '3'];
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
/** Seconds to wait once the target is offline before measuring (its probes back off to 30 s within 32 s). */
const SETTLE_S = Number(process.env.BENCH_SETTLE_S ?? 0);
const TIMEOUTS = (process.env.BENCH_TIMEOUTS ?? '200,40').split(',').filter(Boolean).map(Number);

/** Neighbour scans per second and per neighbour over SECONDS, while `during` runs (it gets a stop signal). */
async function neighbourRate(rig, during = async () => {}) {
  const scansOf = (names) => names.reduce((sum, name) => sum + rig.slave(name).stats.scans, 0);
  const before = scansOf(neighbours);
  const started = performance.now();
  const stop = new AbortController();
  const load = during(stop.signal);
  await sleep(SECONDS * 1000);
  const elapsed = (performance.now() - started) / 1000;
  const scans = scansOf(neighbours) - before;
  stop.abort();
  await load;
  return scans / elapsed / neighbours.length;
}

/** WRITERS clients in a worker thread POST to the offline target in a loop until `signal`; collects latencies. */
async function hammer(rig, latencies, statuses, signal) {
  const worker = new Worker(
    `const { parentPort, workerData } = require('node:worker_threads');
    let stop = false;
    parentPort.on('message', () => (stop = true));
    const latencies = [];
    const statuses = {};
    Promise.all(Array.from({ length: workerData.writers }, async () => {
      while (!stop) {
        const started = performance.now();
        const reply = await fetch(workerData.url, { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: 'value=1' });
        await reply.arrayBuffer();
        latencies.push(performance.now() - started);
        statuses[reply.status] = (statuses[reply.status] ?? 0) + 1;
      }
    })).then(() => parentPort.postMessage({ latencies, statuses }));`,
    { eval: true, workerData: { writers: WRITERS, url: `${rig.baseUrl}/rest/do/${TARGET}_01` } },
  );
  const done = new Promise((resolve) => worker.once('message', resolve));
  await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
  worker.postMessage('stop');
  const result = await done;
  await worker.terminate();
  latencies.push(...result.latencies);
  for (const [status, count] of Object.entries(result.statuses)) statuses.set(Number(status), (statuses.get(Number(status)) ?? 0) + count);
}

const mean = (values) => values.reduce((a, b) => a + b, 0) / Math.max(1, values.length);

function percentile(sorted, share) {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * share))];
}

/** The four slaves on one in-memory line, replying after REPLY_MS, with requests timing out after `timeoutMs`. */
async function startLine(timeoutMs) {
  const line = new FaultyLine(UNITS.map((unit) => ({ unit, model: brain00 })));
  for (const unit of UNITS) line.replyDelayMs.set(unit, REPLY_MS);
  const rig = await startRig([
    {
      link: line,
      slaves: UNITS.map((unit) => ({ name: String(unit), unit, model: brain00, periodMs: PERIOD_MS })),
      options: { timeoutMs, retries: 1 },
    },
  ]);
  return { line, rig };
}

/** All phases on one line whose requests time out after `timeoutMs`. */
async function scenario(timeoutMs) {
  const { line, rig } = await startLine(timeoutMs);
  try {
    await Promise.all(UNITS.map((unit) => rig.whenState(String(unit), 'online')));
    const baseline = await neighbourRate(rig);

    line.silent.add(Number(TARGET));
    await rig.whenState(TARGET, 'offline');
    await sleep(SETTLE_S * 1000);
    const latencies = [];
    const statuses = new Map();
    const baselines = [baseline];
    const faulties = [];
    for (let round = 0; round < ROUNDS; round++) {
      faulties.push(await neighbourRate(rig, (stopSignal) => hammer(rig, latencies, statuses, stopSignal)));
      if (round < ROUNDS - 1) baselines.push(await neighbourRate(rig));
    }
    const allOnline = baselines[0];
    const offlineQuiet = baselines.slice(1);
    const faulty = faulties.reduce((a, b) => a + b) / faulties.length;
    latencies.sort((a, b) => a - b);
    const wroteOnWire = line.heardWrites.get(Number(TARGET)) ?? 0;
    line.silent.delete(Number(TARGET));
    await rig.whenState(TARGET, 'online');

    line.lossy.set(Number(TARGET), 0.3);
    const lossy = rig.slave(TARGET);
    const block = lossy.cache.blocks[0];
    let refreshes = 0;
    let lastRead = block.readAt;
    const scan = lossy.scan.bind(lossy);
    lossy.scan = async (now) => {
      await scan(now);
      if (block.readAt !== lastRead) refreshes++;
      lastRead = block.readAt;
    };
    let samples = 0;
    let offline = 0;
    const sampler = setInterval(() => {
      samples++;
      if (lossy.state === 'offline') offline++;
    }, 20);
    const lossyNeighbours = await neighbourRate(rig);
    clearInterval(sampler);
    const refreshRate = refreshes / SECONDS;

    return {
      timeout_ms: timeoutMs,
      seconds_per_phase: SECONDS,
      rounds: ROUNDS,
      neighbour_hz_all_online: +allOnline.toFixed(2),
      neighbour_hz_target_offline_no_writers: +mean(offlineQuiet).toFixed(2),
      neighbour_hz_target_offline_4_writers: +faulty.toFixed(2),
      neighbour_rate_kept_vs_all_online: +(faulty / allOnline).toFixed(3),
      neighbour_rate_kept_vs_offline_no_writers: +(faulty / mean(offlineQuiet)).toFixed(3),
      offline_writes: latencies.length,
      offline_write_statuses: Object.fromEntries(statuses),
      offline_writes_on_wire: wroteOnWire,
      offline_write_ms_median: +percentile(latencies, 0.5).toFixed(2),
      offline_write_ms_p99: +percentile(latencies, 0.99).toFixed(2),
      lossy_refresh_hz: +refreshRate.toFixed(2),
      lossy_refresh_share_of_configured: +(refreshRate / (1000 / PERIOD_MS)).toFixed(3),
      lossy_state_at_end: lossy.state,
      lossy_shown_offline_share: +(offline / Math.max(1, samples)).toFixed(3),
      lossy_success_ratio: +lossy.successRatio.toFixed(2),
      neighbour_hz_next_to_lossy: +lossyNeighbours.toFixed(2),
    };
  } finally {
    await rig.stop();
}
}

/** Neighbour scans in each second: `before` seconds healthy, then `fault()` and `after` seconds more. */
async function perSecondAround(rig, fault, before, after) {
  const scansOf = () => neighbours.reduce((sum, name) => sum + rig.slave(name).stats.scans, 0);
  const counts = [];
  let last = scansOf();
  for (let second = 0; second < before + after; second++) {
    if (second === before) fault();
    const target = performance.now() + 1000;
    await sleep(1000);
    // Timers run late on a busy machine: scale to the second actually measured.
    const late = 1000 / (1000 + performance.now() - target);
    const now = scansOf();
    counts.push(((now - last) * late) / neighbours.length);
    last = now;
  }
  return counts;
}

/** A target that replies `kind` ('late': 50 ms after its timeout; 'wrong-unit': with another unit id). */
async function misbehaving(kind, timeoutMs) {
  const { line, rig } = await startLine(timeoutMs);
  try {
    await Promise.all(UNITS.map((unit) => rig.whenState(String(unit), 'online')));
    const window = 10;
    const counts = await perSecondAround(
      rig,
      () => {
        if (kind === 'late') line.replyDelayMs.set(Number(TARGET), timeoutMs + 50);
        else line.wrongUnit.set(Number(TARGET), 77);
      },
      window,
      2 * window,
    );
    const sum = (from) => counts.slice(from, from + window).reduce((a, b) => a + b, 0);
    const baseline = sum(0);
    const windows = Array.from({ length: counts.length - window + 1 }, (_, from) => sum(from) / baseline);
    return {
      fault: kind,
      timeout_ms: timeoutMs,
      neighbour_hz_per_second: counts.map((value) => +value.toFixed(1)),
      neighbour_rate_lowest_10s_window_vs_before: +Math.min(...windows).toFixed(3),
      target_state_at_end: rig.slave(TARGET).state,
      target_last_error: rig.slave(TARGET).lastError,
    };
  } finally {
    await rig.stop();
  }
}

// The daemon's RTU default timeout, and one shorter than the scan period:
// a timeout blocks the line, so neighbours lose slots only when it is longer
// than their period.
const results = [];
for (const timeoutMs of TIMEOUTS) results.push(await scenario(timeoutMs));
if (process.env.BENCH_MISBEHAVING !== '0') for (const kind of ['late', 'wrong-unit']) results.push(await misbehaving(kind, 200));
console.log(JSON.stringify(results, null, 2));
