// `npm run bench`: measures the built daemon (dist/iogate.js, simulated boards
// from bench/config.yaml, started with the node options of
// deploy/iogate.service) against a bare node:http server serving the same
// bytes, in one run, and writes bench/results/latest.{md,json}.
//
// HTTP load comes from wrk (Debian package `wrk`); run as root, the script
// installs it when missing. Each GET is measured in rounds that alternate
// between iogate and the bare server, and each side's best round is reported,
// so a burst of other work on the machine does not decide the ratio.
// Memory is reported as RSS and its parts (RssAnon, private; RssFile, mapped
// files shared with other Node processes), idle, BENCH_SETTLE seconds after a
// first use (one second of each route), under load and BENCH_SETTLE seconds
// after the load.
// Environment:
//   BENCH_DURATION  seconds per load and idle window (default 10)
//   BENCH_SETTLE    seconds after the load before memory is read again (default 30)
//   BENCH_IDLE_AFTER  seconds from start-up to the idle window (default 12)
//   BENCH_ROUNDS    alternating rounds per GET (default 3)
//   BENCH_THREADS, BENCH_CONNECTIONS  wrk -t / -c (default 2 / 16)
import { existsSync, statSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  BENCH_DIR,
  BUNDLE,
  IDLE_AFTER_S,
  NO_MEMORY,
  RESULTS,
  captureReply,
  cpuSeconds,
  ensureWrk,
  fmt,
  freePort,
  get,
  log,
  maxMemory,
  memoryCell,
  memoryOf,
  memorySampler,
  positive,
  ratio,
  runWrk,
  serviceEnvironment,
  serviceNodeOptions,
  spawnBare,
  spawnDaemon as spawnWithConfig,
  stop,
  waitForAnswer,
  machineFacts,
  tempDir,
} from './common.mjs';

const CONFIG = join(BENCH_DIR, 'config.yaml');

const DURATION_S = positive('BENCH_DURATION', 10);
const ROUNDS = positive('BENCH_ROUNDS', 3);
const THREADS = positive('BENCH_THREADS', 2);
const CONNECTIONS = positive('BENCH_CONNECTIONS', 16);
/** How long after the last load memory is read again, to see what is given back. */
const SETTLE_S = positive('BENCH_SETTLE', 30);
const WARMUP_S = Math.min(2, DURATION_S);
/** Seconds of each route in the first-use phase. */
const FIRST_USE_S = 1;
const STATS_MS = 250;
const COLD_STARTS = 5;

// Published figures for EVOK on a comparable 2-core machine (wrk -t2 -c16 -d10s).
const EVOK = {
  getSingle: { rps: 6400, p99Ms: 4 },
  getAll: { rps: 3400 },
  postSingle: { rps: 2300, p99Ms: 25 },
  pollRetainedUnderLoad: 2 / 3,
  rssIdleMb: 47,
  cpuIdlePercent: 6.4,
};

const BULK_BODY = JSON.stringify({
  individual_assignments: ['1_01', '1_02', '1_03', '1_04'].map((circuit) => ({
    device_type: 'do',
    device_circuit: circuit,
    assigned_values: { value: 1 },
  })),
});

const NODE_OPTIONS = serviceNodeOptions();
const spawnDaemon = (port, env = {}) => spawnWithConfig(CONFIG, port, { env, nodeOptions: NODE_OPTIONS });
const wrk = (url, post, seconds = DURATION_S) => runWrk(url, { seconds, threads: THREADS, connections: CONNECTIONS, post });

/** Achieved Modbus reads per second between two instants, from the daemon's stats lines. */
function pollRate(stats, from, to) {
  const inside = stats.filter((line) => line.receivedAt >= from && line.receivedAt <= to);
  if (inside.length < 2) return null;
  const first = inside[0];
  const last = inside[inside.length - 1];
  return {
    planned: first.plannedPollRate,
    achieved: ((last.simReads - first.simReads) * 1000) / (last.atMs - first.atMs),
    overruns: last.overruns - first.overruns,
    busTimeouts: last.busTimeouts - first.busTimeouts,
  };
}

// ---------------------------------------------------------------- the run

async function coldStarts() {
  const times = [];
  for (let i = 0; i < COLD_STARTS; i++) {
    const port = await freePort();
    const started = performance.now();
    const { child } = spawnDaemon(port);
    await waitForAnswer(port, '/rest/do/1_01', child);
    times.push(performance.now() - started);
    await stop(child);
  }
  times.sort((a, b) => a - b);
  return { medianMs: times[Math.floor(times.length / 2)], runsMs: times.map((ms) => Math.round(ms)) };
}

async function main() {
  if (!existsSync(BUNDLE)) throw new Error(`${BUNDLE} is missing; run \`node build.mjs\` first (npm run bench does)`);
  ensureWrk();
  const machine = {
    ...machineFacts({ threads: THREADS, connections: CONNECTIONS, seconds: DURATION_S, nodeOptions: NODE_OPTIONS, rounds: ROUNDS }),
    environment: Object.entries(serviceEnvironment()).map(([name, value]) => `${name}=${value}`).join(' '),
    date: new Date().toISOString(),
    // Other work on the machine skews every figure; the load average says how much there was.
    loadAverageBefore: loadavg()[0],
  };
  log(`node ${machine.node}, ${machine.cores} × ${machine.cpu}; wrk ${machine.wrkArgs}`);

  log(`cold start, ${COLD_STARTS} runs`);
  const coldStart = await coldStarts();

  const port = await freePort();
  const daemon = spawnDaemon(port, { IOGATE_STATS_MS: String(STATS_MS) });
  const pid = daemon.child.pid;
  await waitForAnswer(port, '/rest/do/1_01', daemon.child);
  const base = `http://127.0.0.1:${port}`;

  // Capture the replies the bare server will replay, byte for byte.
  const gets = {
    getSingle: '/rest/do/1_01',
    getAll: '/rest/all',
    getJsonDi: '/json/di/1_01',
  };
  const replies = {};
  let deviceCount = 0;
  let allBytes = 0;
  for (const path of Object.values(gets)) {
    const { headers, body, bytes } = await captureReply(port, path);
    replies[path] = { headers, body };
    if (path === '/rest/all') {
      deviceCount = JSON.parse(bytes.toString('utf8')).length;
      allBytes = bytes.length;
    }
  }
  log(`/rest/all lists ${deviceCount} devices (${allBytes} bytes)`);
  const work = tempDir('iogate-bench-');
  writeFileSync(join(work, 'replies.json'), JSON.stringify(replies));
  const barePort = await freePort();
  const bare = await spawnBare(barePort, join(work, 'replies.json'));
  const bareIdle = memoryOf(bare.pid);

  // Idle: the daemon polls at its configured rate with no HTTP traffic, once start-up is over.
  log(`idle, ${DURATION_S} s, after ${IDLE_AFTER_S} s of settling`);
  await sleep(IDLE_AFTER_S * 1000);
  const idleFrom = performance.now();
  const cpuFrom = cpuSeconds(pid);
  const idleMemory = memorySampler(pid);
  await sleep(DURATION_S * 1000);
  const idleTo = performance.now();
  const idle = {
    cpuPercent: ((cpuSeconds(pid) - cpuFrom) / ((idleTo - idleFrom) / 1000)) * 100,
    memory: idleMemory(),
    poll: pollRate(daemon.stats, idleFrom, idleTo),
  };

  const bulkProbe = await get(port, '/bulk', 'POST', { body: BULK_BODY, contentType: 'application/json' });
  // Each assignment answers in its own envelope inside a 200; a failing one would make the figure meaningless.
  if (bulkProbe.status !== 404 && (bulkProbe.status !== 200 || bulkProbe.body.includes('"success":false'))) {
    throw new Error(`POST /bulk probe failed (${bulkProbe.status}): ${bulkProbe.body}`);
  }
  const scenarios = [
    { key: 'getSingle', label: 'GET /rest/do/1_01', path: gets.getSingle, bare: true },
    { key: 'getAll', label: `GET /rest/all (${deviceCount} devices)`, path: gets.getAll, bare: true },
    { key: 'getJsonDi', label: 'GET /json/di/1_01', path: gets.getJsonDi, bare: true },
    {
      key: 'postSingle',
      label: 'POST /rest/do/1_01 value=1',
      path: '/rest/do/1_01',
      post: { body: 'value=1', contentType: 'application/x-www-form-urlencoded' },
    },
    {
      key: 'postBulk',
      label: 'POST /bulk (4 assignments)',
      path: '/bulk',
      post: { body: BULK_BODY, contentType: 'application/json' },
      skip: bulkProbe.status === 404 ? 'n/a (no /bulk route in this build)' : undefined,
    },
  ];

  // First use: a second of each route, then quiet. Serving its first
  // requests makes a process compile the request path and load Node's lazy
  // internals, once; memory read after this and after the full load tells that
  // one-time cost from what a load leaves behind.
  log(`first use: ${FIRST_USE_S} s of each route, then ${SETTLE_S} s quiet`);
  for (const scenario of scenarios) {
    if (scenario.skip) continue;
    await wrk(base + scenario.path, scenario.post, FIRST_USE_S);
    if (scenario.bare) await wrk(`http://127.0.0.1:${barePort}${scenario.path}`, undefined, FIRST_USE_S);
  }
  await sleep(SETTLE_S * 1000);
  const firstUseMemory = memoryOf(pid);
  const bareFirstUseMemory = memoryOf(bare.pid);

  const load = {};
  let loadMemory = NO_MEMORY;
  let bareLoadMemory = NO_MEMORY;
  /** One measured wrk run against `target`, with the memory and poll rate seen meanwhile. */
  const measure = async (target, url, post) => {
    // A short unmeasured run first, so no server is measured while its
    // handlers are still being compiled.
    await wrk(url, post, WARMUP_S);
    const memory = memorySampler(target.pid);
    const from = performance.now();
    const result = await wrk(url, post);
    const to = performance.now();
    const seen = memory();
    // Leave out the first half second: wrk connecting, and stats lines in flight.
    return { ...result, memory: seen, poll: target === daemon.child ? pollRate(daemon.stats, from + 500, to) : undefined };
  };
  const best = (runs) => runs.reduce((a, b) => (b.rps > a.rps ? b : a));
  for (const scenario of scenarios) {
    if (scenario.skip) {
      log(`${scenario.label}: ${scenario.skip}`);
      load[scenario.key] = { label: scenario.label, skipped: scenario.skip };
      continue;
    }
    const iogateRuns = [];
    const bareRuns = [];
    for (let round = 1; round <= (scenario.bare ? ROUNDS : 1); round++) {
      log(`${scenario.label}${scenario.bare ? `, round ${round}` : ''}`);
      iogateRuns.push(await measure(daemon.child, base + scenario.path, scenario.post));
      if (scenario.bare) {
        log(`${scenario.label}, round ${round} (bare node:http)`);
        bareRuns.push(await measure(bare, `http://127.0.0.1:${barePort}${scenario.path}`));
      }
    }
    for (const run of iogateRuns) loadMemory = maxMemory(loadMemory, run.memory);
    for (const run of bareRuns) bareLoadMemory = maxMemory(bareLoadMemory, run.memory);
    const iogate = best(iogateRuns);
    // The poll rate must hold in every round, so the worst round counts.
    const poll = iogateRuns.map((run) => run.poll).reduce((a, b) => (b && (!a || b.achieved < a.achieved) ? b : a));
    load[scenario.key] = {
      label: scenario.label,
      iogate,
      bare: bareRuns.length > 0 ? best(bareRuns) : undefined,
      roundsRps: { iogate: iogateRuns.map((run) => run.rps), bare: bareRuns.map((run) => run.rps) },
      poll,
    };
    await sleep(1000);
  }

  // What each process gives back once the load is over.
  log(`memory ${SETTLE_S} s after the load`);
  await sleep(SETTLE_S * 1000);
  const afterMemory = memoryOf(pid);
  const bareAfterMemory = memoryOf(bare.pid);

  await stop(bare);
  await stop(daemon.child);

  machine.loadAverageAfter = loadavg()[0];
  const results = {
    machine,
    devices: deviceCount,
    restAllBytes: allBytes,
    bundleBytes: statSync(BUNDLE).size,
    coldStart,
    idle,
    firstUseMemory,
    loadMemory,
    afterMemory,
    idleAfterS: IDLE_AFTER_S,
    idleSeconds: DURATION_S,
    bare: { idle: bareIdle, firstUse: bareFirstUseMemory, load: bareLoadMemory, after: bareAfterMemory },
    load,
    evok: EVOK,
  };
  results.targets = judge(results);
  writeFileSync(join(RESULTS, 'latest.json'), JSON.stringify(results, null, 2) + '\n');
  writeFileSync(join(RESULTS, 'latest.md'), markdown(results));
  process.stdout.write(markdown(results));
  log(`wrote ${join(RESULTS, 'latest.md')} and latest.json`);
}

// ---------------------------------------------------------------- verdicts

function judge(r) {
  const { getSingle, getAll, postSingle } = r.load;
  const pollShares = Object.values(r.load)
    .filter((scenario) => scenario.poll)
    .map((scenario) => ({ label: scenario.label, share: scenario.poll.achieved / scenario.poll.planned }));
  const worstPoll = pollShares.reduce((worst, entry) => (entry.share < worst.share ? entry : worst), { share: Infinity });
  const target = (name, value, limit, pass, unit) => ({ name, value, limit, unit, pass });
  return [
    target('GET single device vs bare node:http', getSingle.iogate.rps / getSingle.bare.rps, 0.8, getSingle.iogate.rps >= 0.8 * getSingle.bare.rps, 'ratio'),
    target('GET single device p99', getSingle.iogate.p99Ms, 2, getSingle.iogate.p99Ms <= 2, 'ms'),
    target('GET /rest/all vs bare node:http', getAll.iogate.rps / getAll.bare.rps, 0.5, getAll.iogate.rps >= 0.5 * getAll.bare.rps, 'ratio'),
    target('POST confirmed write vs GET single', postSingle.iogate.rps / getSingle.iogate.rps, 0.5, postSingle.iogate.rps >= 0.5 * getSingle.iogate.rps, 'ratio'),
    target(`poll rate kept under load (worst: ${worstPoll.label})`, worstPoll.share, 0.98, worstPoll.share >= 0.98, 'ratio'),
    target('RSS idle', r.idle.memory.rssMb, 47, r.idle.memory.rssMb <= 47, 'MB'),
    target('RSS under load', r.loadMemory.rssMb, 70, r.loadMemory.rssMb <= 70, 'MB'),
    target('private memory (RssAnon) idle', r.idle.memory.anonMb, 16, r.idle.memory.anonMb <= 16, 'MB'),
    target('private memory (RssAnon) under load', r.loadMemory.anonMb, 24, r.loadMemory.anonMb <= 24, 'MB'),
    target(`private memory ${SETTLE_S} s after the load, above idle`, r.afterMemory.anonMb - r.idle.memory.anonMb, 2, r.afterMemory.anonMb - r.idle.memory.anonMb <= 2, 'MB'),
    target(`private memory ${SETTLE_S} s after the load, above the same ${SETTLE_S} s after first use`, r.afterMemory.anonMb - r.firstUseMemory.anonMb, 2, r.afterMemory.anonMb - r.firstUseMemory.anonMb <= 2, 'MB'),
    target('CPU idle (default scan rate)', r.idle.cpuPercent, 3.2, r.idle.cpuPercent <= 3.2, '% of a core'),
    target('cold start to first 200', r.coldStart.medianMs, 300, r.coldStart.medianMs <= 300, 'ms'),
  ];
}

// ---------------------------------------------------------------- report


function markdown(r) {
  const rows = [];
  const row = (...cells) => rows.push(`| ${cells.join(' | ')} |`);
  row('Measure', 'iogate', 'bare node:http', 'iogate / bare', 'EVOK', 'iogate / EVOK');
  row('---', '---:', '---:', '---:', '---:', '---:');
  const evokFor = { getSingle: EVOK.getSingle, getAll: EVOK.getAll, postSingle: EVOK.postSingle };
  for (const [key, scenario] of Object.entries(r.load)) {
    if (scenario.skipped) {
      row(`${scenario.label} req/s`, scenario.skipped, '', '', '', '');
      continue;
    }
    const { iogate, bare } = scenario;
    const evok = evokFor[key];
    const errors = iogate.non2xx ? ` (${iogate.non2xx} non-2xx!)` : '';
    row(`${scenario.label} req/s`, fmt(iogate.rps) + errors, fmt(bare?.rps), ratio(iogate.rps, bare?.rps), fmt(evok?.rps), ratio(iogate.rps, evok?.rps));
    row(`${scenario.label} p50 / p99 ms`, `${fmt(iogate.p50Ms, 2)} / ${fmt(iogate.p99Ms, 2)}`, bare ? `${fmt(bare.p50Ms, 2)} / ${fmt(bare.p99Ms, 2)}` : '', '', evok?.p99Ms ? `– / ${evok.p99Ms}` : '', '');
  }
  const pollCell = (poll) => (poll ? `${fmt(poll.achieved)} of ${fmt(poll.planned)} (${fmt((poll.achieved / poll.planned) * 100, 1)} %)` : '–');
  row('Modbus polls/s idle', pollCell(r.idle.poll), '', '', '', '');
  for (const scenario of Object.values(r.load)) {
    if (scenario.poll) row(`Modbus polls/s during ${scenario.label}`, pollCell(scenario.poll), '', '', `${fmt(EVOK.pollRetainedUnderLoad * 100)} % kept`, '');
  }
  row('RSS (RssAnon + RssFile) idle MB', memoryCell(r.idle.memory), memoryCell(r.bare.idle), ratio(r.idle.memory.rssMb, r.bare.idle.rssMb), fmt(EVOK.rssIdleMb), ratio(r.idle.memory.rssMb, EVOK.rssIdleMb));
  row('RSS (RssAnon + RssFile) under load (max) MB', memoryCell(r.loadMemory), memoryCell(r.bare.load), ratio(r.loadMemory.rssMb, r.bare.load.rssMb), '', '');
  row(`RSS (RssAnon + RssFile) ${SETTLE_S} s after the load MB`, memoryCell(r.afterMemory), memoryCell(r.bare.after), ratio(r.afterMemory.rssMb, r.bare.after.rssMb), '', '');
  row('Private memory (RssAnon) idle / under load / after MB', `${fmt(r.idle.memory.anonMb, 1)} / ${fmt(r.loadMemory.anonMb, 1)} / ${fmt(r.afterMemory.anonMb, 1)}`, `${fmt(r.bare.idle.anonMb, 1)} / ${fmt(r.bare.load.anonMb, 1)} / ${fmt(r.bare.after.anonMb, 1)}`, ratio(r.loadMemory.anonMb, r.bare.load.anonMb), '', '');
  row(`Private memory (RssAnon) ${SETTLE_S} s after first use (${FIRST_USE_S} s of each route) MB`, fmt(r.firstUseMemory.anonMb, 1), fmt(r.bare.firstUse.anonMb, 1), ratio(r.firstUseMemory.anonMb, r.bare.firstUse.anonMb), '', '');
  row('CPU idle, % of a core', fmt(r.idle.cpuPercent, 2), '', '', fmt(EVOK.cpuIdlePercent, 1), ratio(r.idle.cpuPercent, EVOK.cpuIdlePercent));
  row('Cold start to first 200 (median of 5) ms', fmt(r.coldStart.medianMs), '', '', '', '');
  row('Bundle dist/iogate.js KB', fmt(r.bundleBytes / 1024), '', '', '', '');

  const targets = ['| Target | Limit | Measured | Result |', '| --- | ---: | ---: | --- |'];
  for (const t of r.targets) {
    const shown = t.unit === 'ratio' ? `${fmt(t.value * 100, 1)} %` : `${fmt(t.value, t.unit === 'ms' && t.value < 10 ? 2 : 1)} ${t.unit}`;
    const limit = t.unit === 'ratio' ? `≥ ${fmt(t.limit * 100)} %` : `≤ ${t.limit} ${t.unit}`;
    targets.push(`| ${t.name} | ${limit} | ${shown} | ${t.pass ? 'pass' : '**miss**'} |`);
  }

  return `# iogate benchmark

${r.machine.date} · Node ${r.machine.node} \`${[r.machine.environment, r.machine.nodeOptions].filter(Boolean).join(' ')}\` · ${r.machine.mallocTrimAddon ? 'with' : 'without'} the malloc_trim addon · ${r.machine.cores} × ${r.machine.cpu} · ${r.machine.wrk} \`${r.machine.wrkArgs}\` · best of ${r.machine.rounds} alternating rounds per GET · load average ${fmt(r.machine.loadAverageBefore, 2)} before, ${fmt(r.machine.loadAverageAfter, 2)} after

Daemon: \`dist/iogate.js\` with \`bench/config.yaml\` (${r.devices} devices on simulated boards, two SIMULATOR buses, 50 Hz scans; \`/rest/all\` is ${fmt(r.restAllBytes)} bytes). Bare server: \`bench/bare-server.mjs\`, replaying iogate's own replies (same headers, same bytes). Idle figures come from a ${r.idleSeconds} s window opening ${r.idleAfterS} s after start-up. EVOK figures are published reference numbers for a comparable machine, not measured here.

${rows.join('\n')}

${targets.join('\n')}
`;
}

await main();
