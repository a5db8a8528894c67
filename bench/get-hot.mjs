// `npm run bench:get`: the GET hot path. wrk on `GET /rest/do/1_01` against
// the built daemon (the service unit's node options) and against the bare
// node:http server replaying the daemon's own reply byte for byte
// (bench/bare-server.mjs, no node options), in alternating rounds of one run,
// each round starting one server further on.
//
// The steady measure is CPU per request: utime + stime of the server process
// (/proc/<pid>/stat) over the requests wrk got answered in the round. On a
// shared machine throughput moves with whatever else runs; the CPU a request
// costs moves much less. Throughput is reported beside it. Ratios are
// bare / daemon, so 1.0 means "as cheap as the bare server".
//
// More daemons can run in the same rounds, to compare node options or builds
// on the same footing:
//   --variant 'name=--opt --opt'   the built bundle with these node options ('' = none)
//   --bundle 'name=/path/iogate.js' another bundle (e.g. main's build) with the unit's options
//   --bare-variant 'name=--opt …'   the bare server with these node options, as a reference:
//                                    what the options cost node:http itself
//   --bare-poll 'name=--opt …'      the same, also polling the daemon's read plan in its
//                                    process (bench/bare-poller.mjs, against simulators of
//                                    its own over Modbus TCP): what polling while serving
//                                    costs any Node process
// A bare server given --expose-gc runs two full collections after each of its
// rounds, as the daemon does once a burst of requests is over.
// With --trace-gc each daemon's V8 collections are counted per 1,000 requests, with
// their main-thread time (pauses and incremental marking steps) per request;
// with --cpu-prof DIR each daemon writes a CPU profile there (bench/cpu-profile.mjs reads it).
// --allocations: after the rounds, each server (the bare one too) runs
// --allocation-seconds of load with V8's sampling heap profiler on (bench/probe.cjs,
// objects that died young included): bytes allocated per request and where.
// --memory reads each daemon's RssAnon idle (before any load), its peak under
// the load and --settle seconds after the last round.
//
// --minimal-bare adds a second bare server that serves the same body with only
// Content-Type and the CORS headers (no ETag, no Content-Length: node:http adds
// Date, Connection and Keep-Alive and sends the body chunked): the least a
// server can answer; each daemon's ratios (minimal / daemon) are in the JSON as *_vs_minimal.
//
// Prints one line per round and server, a table, and one JSON line at the end:
//   { ratio_throughput, ratio_cpu, node_flags, variants: { name: {…} }, … }
// (the ratios of the first daemon, the unit's options on the built bundle:
// medians of the per-round ratios against the bare server's round next to it).
import { existsSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  BENCH_DIR,
  askProbe,
  bareCollect,
  barePollPlan,
  BUNDLE,
  IDLE_AFTER_S,
  captureReply,
  collectsLikeTheDaemon,
  cpuSeconds,
  ensureWrk,
  fmt,
  freePort,
  log,
  median,
  memoryOf,
  namedSpec,
  optionWords,
  memorySampler,
  runWrk,
  serviceNodeOptions,
  spawnBare,
  spawnDaemon,
  stop,
  waitForAnswer,
  tempDir,
} from './common.mjs';

const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    seconds: { type: 'string', default: '5' },
    threads: { type: 'string', default: '2' },
    connections: { type: 'string', default: '16' },
    path: { type: 'string', default: '/rest/do/1_01' },
    variant: { type: 'string', multiple: true, default: [] },
    bundle: { type: 'string', multiple: true, default: [] },
    'bare-variant': { type: 'string', multiple: true, default: [] },
    'bare-poll': { type: 'string', multiple: true, default: [] },
    'trace-gc': { type: 'boolean', default: false },
    'cpu-prof': { type: 'string' },
    memory: { type: 'boolean', default: false },
    allocations: { type: 'boolean', default: false },
    'allocation-seconds': { type: 'string', default: '3' },
    settle: { type: 'string', default: '30' },
    'minimal-bare': { type: 'boolean', default: false },
  },
});
const ROUNDS = Math.max(1, Math.round(Number(args.rounds)));
const SECONDS = Number(args.seconds);
const THREADS = Number(args.threads);
const CONNECTIONS = Number(args.connections);
const SETTLE_S = Number(args.settle);
if (!(SECONDS > 0) || !(THREADS > 0) || !(CONNECTIONS > 0) || !(SETTLE_S >= 0)) throw new Error('--seconds, --threads and --connections take positive numbers');
const WARMUP_S = 2;
const CONFIG = join(BENCH_DIR, 'config.yaml');

const PROBE = ['--require', join(BENCH_DIR, 'probe.cjs')];
const UNIT_OPTIONS = serviceNodeOptions();

const variants = [
  { name: 'iogate', bundle: BUNDLE, nodeOptions: UNIT_OPTIONS },
  ...args.variant.map((spec) => {
    const [name, options] = namedSpec(spec);
    return { name, bundle: BUNDLE, nodeOptions: optionWords(options) };
  }),
  ...args.bundle.map((spec) => {
    const [name, bundle] = namedSpec(spec);
    return { name, bundle, nodeOptions: UNIT_OPTIONS };
  }),
];
if (new Set(variants.map((variant) => variant.name)).size !== variants.length || variants.some((variant) => variant.name === 'bare')) {
  throw new Error('variant names must differ from each other and from "bare"');
}

/** Counts V8's collections from --trace-gc lines on the daemon's stdout. */
function gcCounter(child) {
  const counts = { scavenges: 0, markCompacts: 0, ms: 0, markingMs: 0 };
  let pending = '';
  child.stdout.setEncoding('utf8').on('data', (chunk) => {
    pending += chunk;
    const lines = pending.split('\n');
    pending = lines.pop();
    for (const line of lines) {
      if (line.includes('Scavenge')) counts.scavenges++;
      else if (line.includes('Mark-Compact')) counts.markCompacts++;
      else continue;
      // "… MB, 0.45 / 0.00 ms …": the pause on the main thread.
      counts.ms += Number(/MB, ([\d.]+) \/ [\d.]+ ms/.exec(line)?.[1] ?? 0);
      // "(+ 12.3 ms in 45 steps since start of marking …)": incremental marking done in steps, between the pauses.
      counts.markingMs += Number(/\(\+ ([\d.]+) ms in \d+ steps/.exec(line)?.[1] ?? 0);
    }
  });
  return counts;
}

async function main() {
  if (!existsSync(BUNDLE)) throw new Error(`${BUNDLE} is missing; run \`node build.mjs\` first (npm run bench:get does)`);
  ensureWrk();
  const work = tempDir('iogate-get-hot-');
  const loadBefore = loadavg()[0];
  log(`${variants.length} daemon(s) and the bare server, ${ROUNDS} rounds of ${SECONDS} s, wrk -t${THREADS} -c${CONNECTIONS} GET ${args.path}`);

  const servers = [];
  for (const variant of variants) {
    const port = await freePort();
    const extra = [
      ...(args['trace-gc'] ? ['--trace-gc'] : []),
      ...(args['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${join(args['cpu-prof'], variant.name)}`] : []),
    ];
    if (args.allocations) extra.push(...PROBE);
    const { child } = spawnDaemon(CONFIG, port, { nodeOptions: [...variant.nodeOptions, ...extra], bundle: variant.bundle, stdout: args['trace-gc'], ipc: args.allocations });
    const gc = args['trace-gc'] ? gcCounter(child) : undefined;
    await waitForAnswer(port, args.path, child);
    servers.push({ ...variant, child, pid: child.pid, url: `http://127.0.0.1:${port}${args.path}`, gc, rounds: [] });
  }
  // The bare server replays the first daemon's reply, headers and bytes.
  const reply = await captureReply(Number(new URL(servers[0].url).port), args.path);
  for (const server of servers.slice(1)) {
    const other = await captureReply(Number(new URL(server.url).port), args.path);
    if (!other.bytes.equals(reply.bytes) || JSON.stringify(other.headers) !== JSON.stringify(reply.headers)) {
      log(`note: ${server.name} answers differently from ${servers[0].name} (headers or body)`);
    }
  }
  writeFileSync(join(work, 'replies.json'), JSON.stringify({ [args.path]: { headers: reply.headers, body: reply.body } }));
  const barePort = await freePort();
  const bareChild = await spawnBare(barePort, join(work, 'replies.json'), args.allocations ? PROBE : [], { ipc: args.allocations });
  const bare = { name: 'bare', nodeOptions: [], child: bareChild, pid: bareChild.pid, url: `http://127.0.0.1:${barePort}${args.path}`, rounds: [] };
  if (args['minimal-bare']) {
    const minimalHeaders = Object.fromEntries(
      Object.entries(reply.headers).filter(([name]) => name.toLowerCase() === 'content-type' || name.toLowerCase().startsWith('access-control-')),
    );
    writeFileSync(join(work, 'replies-minimal.json'), JSON.stringify({ [args.path]: { headers: minimalHeaders, body: reply.body } }));
    const port = await freePort();
    const child = await spawnBare(port, join(work, 'replies-minimal.json'));
    log(`minimal-bare serves the same body with only: ${Object.keys(minimalHeaders).join(', ')}`);
    servers.push({ name: 'minimal-bare', nodeOptions: [], bundle: 'bench/bare-server.mjs', child, pid: child.pid, url: `http://127.0.0.1:${port}${args.path}`, rounds: [], bareServer: true });
  }
  const planFile = args['bare-poll'].length > 0 ? await barePollPlan(CONFIG, work) : undefined;
  const bareSpecs = [...args['bare-variant'].map((spec) => [spec, undefined]), ...args['bare-poll'].map((spec) => [spec, planFile])];
  for (const [spec, polls] of bareSpecs) {
    const [name, options] = namedSpec(spec);
    if (servers.some((server) => server.name === name) || name === 'bare') throw new Error(`variant name ${name} is taken`);
    const nodeOptions = optionWords(options);
    const port = await freePort();
    const child = await spawnBare(port, join(work, 'replies.json'), nodeOptions, { planFile: polls });
    servers.push({ name, nodeOptions, bundle: polls ? 'bench/bare-server.mjs + bare-poller.mjs' : 'bench/bare-server.mjs', child, pid: child.pid, url: `http://127.0.0.1:${port}${args.path}`, rounds: [], bareServer: true });
  }

  if (args.memory) {
    log(`idle memory, ${IDLE_AFTER_S} s after start-up`);
    await sleep(IDLE_AFTER_S * 1000);
    for (const server of servers) server.idleAnonMb = memoryOf(server.pid).anonMb;
    log('(the bare servers were started later: their idle figure is from less time after start-up)');
  }

  const wrk = (url, seconds) => runWrk(url, { seconds, threads: THREADS, connections: CONNECTIONS });
  for (const server of [...servers, bare]) await wrk(server.url, WARMUP_S);

  // Each round starts one server further on: with a fixed order the first daemon
  // came out dearest in every run, even against a second daemon with the very same
  // options (0.76× against 0.84× the minimal server, 2026-11-29), so a place in
  // the order must not be a server's for the whole run.
  const everyServer = [...servers, bare];
  for (let round = 1; round <= ROUNDS; round++) {
    const start = (round - 1) % everyServer.length;
    for (const server of [...everyServer.slice(start), ...everyServer.slice(0, start)]) {
      const peak = args.memory ? memorySampler(server.pid) : undefined;
      const gcFrom = server.gc ? { ...server.gc } : undefined;
      const cpuFrom = cpuSeconds(server.pid);
      const result = await wrk(server.url, SECONDS);
      const cpu = cpuSeconds(server.pid) - cpuFrom;
      const figures = {
        rps: result.rps,
        requests: result.requests,
        cpuUsPerRequest: (cpu * 1e6) / result.requests,
        non2xx: result.non2xx,
        p99Ms: result.p99Ms,
      };
      if (peak) figures.peakAnonMb = peak().anonMb;
      if (gcFrom) {
        figures.scavengesPerKRequest = ((server.gc.scavenges - gcFrom.scavenges) * 1000) / result.requests;
        figures.markCompactsPerKRequest = ((server.gc.markCompacts - gcFrom.markCompacts) * 1000) / result.requests;
        figures.gcUsPerRequest = ((server.gc.ms - gcFrom.ms + server.gc.markingMs - gcFrom.markingMs) * 1000) / result.requests;
      }
      if (result.non2xx > 0 || result.socketErrors) log(`${server.name}: ${result.non2xx} non-2xx replies ${result.socketErrors ?? ''}`);
      server.rounds.push(figures);
      const gcNote = gcFrom
        ? `, ${fmt(figures.scavengesPerKRequest, 2)} scavenges and ${fmt(figures.markCompactsPerKRequest, 3)} mark-compacts / 1k req, ${fmt(figures.gcUsPerRequest, 2)} µs GC / req`
        : '';
      log(`round ${round} ${server.name.padEnd(12)} ${fmt(figures.rps).padStart(7)} req/s, ${fmt(figures.cpuUsPerRequest, 1).padStart(5)} µs CPU / req${gcNote}`);
      // The daemon collects twice once its burst is over (src/memory/quiet-gc.ts); a bare server given --expose-gc does too.
      if (server.bareServer && collectsLikeTheDaemon(server.nodeOptions)) bareCollect(server.child);
    }
  }

  if (args.allocations) {
    for (const server of [...servers.filter((server) => !server.bareServer), bare]) {
      await askProbe(server.child, { probe: 'start-allocations', samplingInterval: 128 }, 'started');
      const result = await wrk(server.url, Number(args['allocation-seconds']));
      const profile = await askProbe(server.child, { probe: 'stop-allocations', top: 60 }, 'allocations');
      server.allocations = { bytesPerRequest: Math.round(profile.bytes / result.requests), top: profile.top.map(([site, bytes]) => [site, Math.round(bytes / result.requests)]) };
      log(`${server.name}: ${server.allocations.bytesPerRequest} bytes allocated per request (sampled); per request by site:`);
      for (const [site, bytes] of server.allocations.top) log(`  ${String(bytes).padStart(6)}  ${site}`);
    }
  }

  if (args.memory) {
    log(`memory ${SETTLE_S} s after the load`);
    await sleep(SETTLE_S * 1000);
    for (const server of servers) server.afterAnonMb = memoryOf(server.pid).anonMb;
  }
  for (const server of [...servers, bare]) await stop(server.child);

  const summary = {};
  for (const server of servers) {
    const perRound = server.rounds.map((figures, i) => ({
      throughput: figures.rps / bare.rounds[i].rps,
      cpu: bare.rounds[i].cpuUsPerRequest / figures.cpuUsPerRequest,
    }));
    summary[server.name] = {
      node_flags: server.nodeOptions.join(' '),
      bundle: server.bundle,
      rps_median: median(server.rounds.map((r) => r.rps)),
      cpu_us_per_request_median: round2(median(server.rounds.map((r) => r.cpuUsPerRequest))),
      cpu_us_per_request_range: range(server.rounds.map((r) => r.cpuUsPerRequest)),
      ratio_throughput: round2(median(perRound.map((r) => r.throughput))),
      ratio_throughput_range: range(perRound.map((r) => r.throughput)),
      ratio_cpu: round2(median(perRound.map((r) => r.cpu))),
      ratio_cpu_range: range(perRound.map((r) => r.cpu)),
      ...(server.allocations ? { bytes_allocated_per_request: server.allocations.bytesPerRequest } : {}),
      ...(server.gc
        ? {
            scavenges_per_krequest: round2(median(server.rounds.map((r) => r.scavengesPerKRequest))),
            mark_compacts_per_krequest: Math.round(median(server.rounds.map((r) => r.markCompactsPerKRequest)) * 1000) / 1000,
            gc_pause_us_per_request: round2(median(server.rounds.map((r) => r.gcUsPerRequest))),
          }
        : {}),
      ...(args.memory
        ? { anon_mb_idle: round2(server.idleAnonMb), anon_mb_peak: round2(Math.max(...server.rounds.map((r) => r.peakAnonMb))), anon_mb_after: round2(server.afterAnonMb) }
        : {}),
    };
  }
  const bareSummary = {
    rps_median: median(bare.rounds.map((r) => r.rps)),
    cpu_us_per_request_median: round2(median(bare.rounds.map((r) => r.cpuUsPerRequest))),
    cpu_us_per_request_range: range(bare.rounds.map((r) => r.cpuUsPerRequest)),
    ...(bare.allocations ? { bytes_allocated_per_request: bare.allocations.bytesPerRequest } : {}),
  };

  const rows = [
    '| server | node options | req/s (median) | µs CPU / request (median, range) | bare / it, throughput | bare / it, CPU |',
    '|---|---|---:|---:|---:|---:|',
    ...Object.entries(summary).map(
      ([name, s]) =>
        `| ${name} | ${s.node_flags || '(none)'} | ${fmt(s.rps_median)} | ${fmt(s.cpu_us_per_request_median, 1)} (${s.cpu_us_per_request_range.map((v) => fmt(v, 1)).join('–')}) | ${fmt(s.ratio_throughput, 2)}× (${s.ratio_throughput_range.map((v) => fmt(v, 2)).join('–')}) | ${fmt(s.ratio_cpu, 2)}× (${s.ratio_cpu_range.map((v) => fmt(v, 2)).join('–')}) |`,
    ),
    `| bare node:http | (none) | ${fmt(bareSummary.rps_median)} | ${fmt(bareSummary.cpu_us_per_request_median, 1)} (${bareSummary.cpu_us_per_request_range.map((v) => fmt(v, 1)).join('–')}) | | |`,
  ];
  process.stdout.write(`${rows.join('\n')}\n`);
  const first = summary[servers[0].name];
  const minimal = servers.find((server) => server.name === 'minimal-bare');
  if (minimal) {
    // Same-run ratios of each daemon against the minimal bare server, round by round.
    for (const server of servers) {
      if (server === minimal) continue;
      const perRound = server.rounds.map((figures, i) => ({
        throughput: figures.rps / minimal.rounds[i].rps,
        cpu: minimal.rounds[i].cpuUsPerRequest / figures.cpuUsPerRequest,
      }));
      const s = summary[server.name];
      s.ratio_throughput_vs_minimal = round2(median(perRound.map((r) => r.throughput)));
      s.ratio_throughput_vs_minimal_range = range(perRound.map((r) => r.throughput));
      s.ratio_cpu_vs_minimal = round2(median(perRound.map((r) => r.cpu)));
      s.ratio_cpu_vs_minimal_range = range(perRound.map((r) => r.cpu));
      process.stdout.write(`${server.name} / minimal bare server: throughput ${fmt(s.ratio_throughput_vs_minimal, 2)}×, CPU ${fmt(s.ratio_cpu_vs_minimal, 2)}×\n`);
    }
  }
  const line = {
    ratio_throughput: first.ratio_throughput,
    ratio_cpu: first.ratio_cpu,
    node_flags: first.node_flags,
    bare_node_flags: '',
    path: args.path,
    rounds: ROUNDS,
    seconds: SECONDS,
    wrk: `-t${THREADS} -c${CONNECTIONS}`,
    node: process.version,
    load_average: [round2(loadBefore), round2(loadavg()[0])],
    variants: summary,
    bare: bareSummary,
  };
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

function round2(value) {
  return Math.round(value * 100) / 100;
}

function range(values) {
  return [round2(Math.min(...values)), round2(Math.max(...values))];
}

// An explicit exit: the simulators of --bare-poll would keep the process alive (they are stopped at exit).
main().then(
  () => process.exit(0),
  (error) => {
    log(error.stack ?? String(error));
    process.exit(1);
  },
);
