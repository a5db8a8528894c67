// `npm run bench`: measures the built daemon (dist/iogate.js, simulated boards
// from bench/config.yaml, started with the node options of
// deploy/iogate.service) against a bare node:http server serving the same
// bytes, in one run, and writes bench/results/latest.{md,json}.
//
// HTTP load comes from wrk (Debian package `wrk`); run as root, the script
// installs it when missing. Each GET is measured in rounds that alternate
// between iogate and the bare server, and each side's best round is reported,
// so a burst of other work on the machine does not decide the ratio.
// Environment:
//   BENCH_DURATION  seconds per load and idle window (default 10)
//   BENCH_ROUNDS    alternating rounds per GET (default 3)
//   BENCH_THREADS, BENCH_CONNECTIONS  wrk -t / -c (default 2 / 16)
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { serviceNodeOptions } from './service-options.mjs';
import { setTimeout as sleep } from 'node:timers/promises';

const BENCH_DIR = fileURLToPath(new URL('.', import.meta.url));
const BUNDLE = fileURLToPath(new URL('../dist/iogate.js', import.meta.url));
const CONFIG = join(BENCH_DIR, 'config.yaml');
const RESULTS = join(BENCH_DIR, 'results');

const DURATION_S = positive('BENCH_DURATION', 10);
const ROUNDS = positive('BENCH_ROUNDS', 3);
const THREADS = positive('BENCH_THREADS', 2);
const CONNECTIONS = positive('BENCH_CONNECTIONS', 16);
const WARMUP_S = Math.min(2, DURATION_S);
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

function positive(name, fallback) {
  const value = Number(process.env[name] ?? fallback);
  if (!(value > 0)) throw new Error(`${name} must be a positive number`);
  return value;
}

const NODE_OPTIONS = serviceNodeOptions();

function log(message) {
  process.stderr.write(`bench: ${message}\n`);
}

// ---------------------------------------------------------------- wrk

function ensureWrk() {
  if (hasWrk()) return;
  if (process.getuid?.() !== 0) {
    log('wrk is not installed; install it with `sudo apt-get install -y wrk` and run again');
    process.exit(1);
  }
  log('installing wrk (apt-get install -y wrk)');
  execFileSync('apt-get', ['install', '-y', 'wrk'], { stdio: 'inherit' });
  if (!hasWrk()) throw new Error('wrk still missing after apt-get install');
}

function hasWrk() {
  try {
    execFileSync('wrk', ['--version'], { stdio: 'ignore' });
  } catch (error) {
    // wrk --version prints its banner and exits 1; only a missing binary matters.
    return error.code !== 'ENOENT';
  }
  return true;
}

function wrkVersion() {
  try {
    execFileSync('wrk', ['--version'], { encoding: 'utf8' });
  } catch (error) {
    return String(error.stdout ?? '').split('\n')[0].replace(/\s*\[.*$/, '').trim();
  }
  return 'wrk';
}

/** Runs wrk and returns req/s, p50/p99 in ms, and the count of non-2xx/3xx replies. */
async function runWrk(url, post, seconds = DURATION_S) {
  const args = [`-t${THREADS}`, `-c${CONNECTIONS}`, `-d${seconds}s`, '--latency'];
  const env = { ...process.env };
  if (post) {
    args.push('-s', join(BENCH_DIR, 'post.lua'));
    env.BENCH_BODY = post.body;
    env.BENCH_CONTENT_TYPE = post.contentType;
  }
  const child = spawn('wrk', [...args, url], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk) => (output += chunk));
  const [code] = await once(child, 'exit');
  if (code !== 0) throw new Error(`wrk exited with ${code}:\n${output}`);
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(output)?.[1]);
  const percentile = (p) => {
    const match = new RegExp(`^\\s+${p}%\\s+([\\d.]+)(us|ms|s)\\s*$`, 'm').exec(output);
    if (!match) return null;
    return Number(match[1]) * { us: 0.001, ms: 1, s: 1000 }[match[2]];
  };
  const errors = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(output)?.[1] ?? 0);
  const socketErrors = /Socket errors:.*/.exec(output)?.[0];
  return { rps: Math.round(rps), p50Ms: percentile(50), p99Ms: percentile(99), non2xx: errors, socketErrors };
}

// ---------------------------------------------------------------- processes

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Starts the daemon on `port`; collects its stats lines as they come. */
function spawnDaemon(port, env = {}) {
  const child = spawn(process.execPath, [...NODE_OPTIONS, BUNDLE, '--config', CONFIG, '--port', String(port)], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const stats = [];
  let pending = '';
  let output = '';
  child.stderr.setEncoding('utf8').on('data', (chunk) => {
    pending += chunk;
    const lines = pending.split('\n');
    pending = lines.pop();
    for (const line of lines) {
      if (line.startsWith('stats ')) stats.push({ ...JSON.parse(line.slice(6)), receivedAt: performance.now() });
      else output += `${line}\n`;
    }
  });
  return { child, stats, output: () => output };
}

async function stop(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  await once(child, 'exit');
}

function get(port, path, method = 'GET', body) {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method, agent: false }, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    if (body) {
      req.setHeader('Content-Type', body.contentType);
      req.end(body.body);
    } else {
      req.end();
    }
  });
}

async function waitForAnswer(port, path, child) {
  for (;;) {
    if (child.exitCode !== null) throw new Error(`daemon exited with ${child.exitCode} before answering`);
    try {
      const { status } = await get(port, path);
      if (status === 200) return;
    } catch {
      // Not listening yet.
    }
    await sleep(2);
  }
}

// ---------------------------------------------------------------- /proc

const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());

function cpuSeconds(pid) {
  // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

function rssMb(pid) {
  const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);
  return kb / 1024;
}

/**
 * Memory only this process holds: RSS less the pages of the node binary and
 * shared libraries, which every Node process on the machine shares.
 */
function privateMb(pid) {
  const kb = Number(/^Anonymous:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))[1]);
  return kb / 1024;
}

/** Samples RSS and private memory until stopped; returns the maxima seen. */
function memorySampler(pid) {
  let rss = 0;
  let anon = 0;
  const sample = () => {
    rss = Math.max(rss, rssMb(pid));
    anon = Math.max(anon, privateMb(pid));
  };
  sample();
  const timer = setInterval(sample, 200);
  return () => {
    clearInterval(timer);
    sample();
    return { rssMb: rss, privateMb: anon };
  };
}

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
    node: process.version,
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    wrk: wrkVersion(),
    wrkArgs: `-t${THREADS} -c${CONNECTIONS} -d${DURATION_S}s --latency`,
    nodeOptions: NODE_OPTIONS.join(' '),
    rounds: ROUNDS,
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
    const reply = await get(port, path);
    if (reply.status !== 200) throw new Error(`GET ${path}: ${reply.status}`);
    const headers = Object.fromEntries(
      Object.entries(reply.headers).filter(([name]) => !['date', 'connection', 'keep-alive'].includes(name)),
    );
    replies[path] = { headers, body: reply.body.toString('base64') };
    if (path === '/rest/all') {
      deviceCount = JSON.parse(reply.body.toString('utf8')).length;
      allBytes = reply.body.length;
    }
  }
  log(`/rest/all lists ${deviceCount} devices (${allBytes} bytes)`);
  const work = mkdtempSync(join(tmpdir(), 'iogate-bench-'));
  writeFileSync(join(work, 'replies.json'), JSON.stringify(replies));
  const barePort = await freePort();
  const bare = spawn(process.execPath, [join(BENCH_DIR, 'bare-server.mjs'), String(barePort), join(work, 'replies.json')], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise((resolve) => bare.stdout.once('data', resolve));
  const bareIdle = memorySampler(bare.pid)();

  // Idle: the daemon polls at its configured rate with no HTTP traffic.
  log(`idle, ${DURATION_S} s`);
  await sleep(2000);
  const idleFrom = performance.now();
  const cpuFrom = cpuSeconds(pid);
  const idleMemory = memorySampler(pid);
  await sleep(DURATION_S * 1000);
  const idleTo = performance.now();
  const idle = {
    cpuPercent: ((cpuSeconds(pid) - cpuFrom) / ((idleTo - idleFrom) / 1000)) * 100,
    ...idleMemory(),
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

  const load = {};
  const loadMemory = { rssMb: 0, privateMb: 0 };
  const bareLoadMemory = { rssMb: 0, privateMb: 0 };
  const keepMax = (into, from) => {
    into.rssMb = Math.max(into.rssMb, from.rssMb);
    into.privateMb = Math.max(into.privateMb, from.privateMb);
  };
  /** One measured wrk run against `target`, with the memory and poll rate seen meanwhile. */
  const measure = async (target, url, post) => {
    // A short unmeasured run first, so no server is measured while its
    // handlers are still being compiled.
    await runWrk(url, post, WARMUP_S);
    const memory = memorySampler(target.pid);
    const from = performance.now();
    const result = await runWrk(url, post);
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
    for (const run of iogateRuns) keepMax(loadMemory, run.memory);
    for (const run of bareRuns) keepMax(bareLoadMemory, run.memory);
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
    loadMemory,
    bare: { idle: bareIdle, load: bareLoadMemory },
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
    target('RSS idle', r.idle.rssMb, 47, r.idle.rssMb <= 47, 'MB'),
    target('RSS under load', r.loadMemory.rssMb, 70, r.loadMemory.rssMb <= 70, 'MB'),
    target('CPU idle (default scan rate)', r.idle.cpuPercent, 3.2, r.idle.cpuPercent <= 3.2, '% of a core'),
    target('cold start to first 200', r.coldStart.medianMs, 300, r.coldStart.medianMs <= 300, 'ms'),
  ];
}

// ---------------------------------------------------------------- report

const fmt = (value, digits = 0) => (value === null || value === undefined || Number.isNaN(value) ? '–' : value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }));
const ratio = (a, b) => (a && b ? `${fmt(a / b, 2)}×` : '–');

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
  row('RSS idle MB', fmt(r.idle.rssMb, 1), fmt(r.bare.idle.rssMb, 1), ratio(r.idle.rssMb, r.bare.idle.rssMb), fmt(EVOK.rssIdleMb), ratio(r.idle.rssMb, EVOK.rssIdleMb));
  row('RSS under load (max) MB', fmt(r.loadMemory.rssMb, 1), fmt(r.bare.load.rssMb, 1), ratio(r.loadMemory.rssMb, r.bare.load.rssMb), '', '');
  row('Private (anonymous) memory idle / under load MB', `${fmt(r.idle.privateMb, 1)} / ${fmt(r.loadMemory.privateMb, 1)}`, `${fmt(r.bare.idle.privateMb, 1)} / ${fmt(r.bare.load.privateMb, 1)}`, '', '', '');
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

${r.machine.date} · Node ${r.machine.node} \`${r.machine.nodeOptions}\` · ${r.machine.cores} × ${r.machine.cpu} · ${r.machine.wrk} \`${r.machine.wrkArgs}\` · best of ${r.machine.rounds} alternating rounds per GET · load average ${fmt(r.machine.loadAverageBefore, 2)} before, ${fmt(r.machine.loadAverageAfter, 2)} after

Daemon: \`dist/iogate.js\` with \`bench/config.yaml\` (${r.devices} devices on simulated boards, two SIMULATOR buses, 50 Hz scans; \`/rest/all\` is ${fmt(r.restAllBytes)} bytes). Bare server: \`bench/bare-server.mjs\`, replaying iogate's own replies (same headers, same bytes). EVOK figures are published reference numbers for a comparable machine, not measured here.

${rows.join('\n')}

${targets.join('\n')}
`;
}

await main();
