// `npm run bench:idle`: what doing nothing costs. A PLC spends most of its
// time polling its boards with no client asking anything, so the daemon's
// CPU per poll at idle is the cost its users feel. Side by side, in one run:
//   - the daemon with the boards of bench/config.yaml (same units, models and
//     50 Hz scans), each SIMULATOR line replaced by an iogate-sim Modbus TCP
//     simulator of its own process, so the daemon's CPU is its own work and
//     not the simulator's;
//   - the daemon with the built-in simulated controller (no --config: a
//     simulated Neuron brain board and a simulated owserver, both in the
//     daemon's process, as a user trying iogate sees it);
//   - for each, the bare poller (bench/bare-poller.mjs): the daemon's own
//     read plan (`iogate --read-plan`), the same requests at the same scan
//     periods against an iogate-sim of its own with the same boards, and
//     nothing else. That is the least Node needs for the same reads.
// All run with the node options and environment of deploy/iogate.service; beside
// them (--starts), the same daemon started the two ways a copied bundle is: as
// `node iogate.js` with node's defaults, and run as a program (`./iogate.js`,
// its #! line's options), each with its own simulators, for their private
// memory (RssAnon) and CPU per poll against the unit's in the same rounds.
// After BENCH_IDLE_AFTER seconds (start-up, first compilations) the CPU of
// each process (utime + stime from /proc/<pid>/stat, and the scheduler's run
// time of its threads from schedstat) and the polls its simulator served are
// read in rounds; each round reads the processes in another order, so other
// work on the machine weighs on all alike, and every ratio is taken within
// the run. Polls are Modbus read transactions; for the built-in controller
// they are the daemon's bus requests (GET /metrics). The processes also
// report, through bench/probe.cjs, their event-loop utilisation, timers
// started, garbage collections and, in a last window with V8's sampling heap
// profiler on, bytes and promises allocated per poll and where.
//
//   node bench/idle.mjs [--seconds N] [--rounds N] [--max-ratio R] [--baseline BUNDLE]
//
//   --seconds N      measured seconds in all, split into the rounds (default 60)
//   --rounds N       rounds (default 6)
//   --max-ratio R    exit 1 when the daemon's CPU per poll (bench config) exceeds R times the bare poller's
//   --baseline FILE  also run another build of the daemon (an older dist/iogate.js) with the bench config
//   --allocation-seconds N  the heap-profiler window (default 10; 0: none)
//   --cpu-prof DIR   run every measured process with node --cpu-prof, profiles into DIR/<process>/
//   --node 'CMD …'   run the daemons and bare pollers with this command instead of this node (say,
//                    another architecture's node under qemu-user); the simulators stay on this one
//   --scan-hz N      scan_frequency of the bench config's boards (default: theirs, 50 Hz); an emulated
//                    daemon cannot keep 50 Hz on a busy machine, and a starved process says little per poll
//   --configs LIST   which pairs to run: bench, default or both (default bench,default)
//   --starts LIST    how the daemons are started, for each config: unit (the service unit's options,
//                    always run), plain (`node iogate.js`), program (`./iogate.js`) (default all three)
// Ends with one JSON line; the tables and that line go to bench/results/idle.{md,json}
// (BENCH_OUT names another file; BENCH_OUT=- writes none).
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  BENCH_DIR,
  BENCH_TOGGLE_MS,
  askProbe,
  BUNDLE,
  IDLE_AFTER_S,
  RESULTS,
  configOverTcp,
  cpuSeconds,
  fmt,
  freePort,
  get,
  inheritedEnvironment,
  log,
  machineFacts,
  maxMemory,
  memoryCell,
  memoryOf,
  planOverTcp,
  readPlanOf,
  runSeconds,
  serviceEnvironment,
  serviceNodeOptions,
  reapAtExit,
  spawnDaemon,
  stop,
  waitForAnswer,
  tempDir,
} from './common.mjs';

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '60' },
    rounds: { type: 'string', default: '6' },
    'max-ratio': { type: 'string' },
    baseline: { type: 'string' },
    'allocation-seconds': { type: 'string', default: '10' },
    'cpu-prof': { type: 'string' },
    node: { type: 'string' },
    'scan-hz': { type: 'string' },
    configs: { type: 'string', default: 'bench,default' },
    starts: { type: 'string', default: 'unit,plain,program' },
  },
});
const SECONDS = Number(args.seconds);
const ROUNDS = Math.max(1, Math.round(Number(args.rounds)));
const ALLOCATION_S = Number(args['allocation-seconds']);
const MAX_RATIO = args['max-ratio'] === undefined ? undefined : Number(args['max-ratio']);
if (!(SECONDS > 0) || !(ALLOCATION_S >= 0) || (MAX_RATIO !== undefined && !(MAX_RATIO > 0))) {
  throw new Error('--seconds and --max-ratio take positive numbers, --allocation-seconds zero or more');
}
const PROBE = join(BENCH_DIR, 'probe.cjs');
const NODE_OPTIONS = serviceNodeOptions();
const NODE = args.node ? args.node.trim().split(/\s+/) : [process.execPath];
const profiling = (key) => (args['cpu-prof'] ? ['--cpu-prof', '--cpu-prof-interval=50', `--cpu-prof-dir=${join(args['cpu-prof'], key)}`] : []);

const work = tempDir('iogate-idle-');

/** The bench config with each SIMULATOR line served by its own iogate-sim over Modbus TCP. */
async function benchConfigOverTcp(name) {
  return configOverTcp(join(BENCH_DIR, 'config.yaml'), join(work, `${name}.yaml`), { toggleMs: BENCH_TOGGLE_MS, scanHz: args['scan-hz'] });
}

/** The daemon's read plan for a config (null: the built-in one), from the daemon itself. */
const readPlan = (config, bundle = BUNDLE) => readPlanOf(config, { bundle, cwd: work });

/** A bare poller making the plan's reads against simulators of its own with the same boards. */
async function bareFor(name, plan) {
  const { file, sims } = await planOverTcp(plan, join(work, `${name}-plan.json`), { toggleMs: BENCH_TOGGLE_MS });
  const child = reapAtExit(
    spawn(NODE[0], [...NODE.slice(1), ...NODE_OPTIONS, ...profiling(name === 'bench' ? 'bare' : 'bareDefault'), '--require', PROBE, join(BENCH_DIR, 'bare-poller.mjs'), file], {
      env: { ...inheritedEnvironment(), ...serviceEnvironment() },
      stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
    }),
  );
  await new Promise((resolve, reject) => {
    child.stdout.once('data', resolve);
    child.once('exit', (code) => reject(new Error(`bare poller ${name} exited with ${code}`)));
  });
  return { child, sims };
}

/** `start`: unit, plain or program (spawnDaemon); only the unit's start gets the unit's node options. */
async function daemonWith(key, config, { bundle = BUNDLE, start = 'unit' } = {}) {
  const port = await freePort();
  const options = [...(start === 'unit' ? NODE_OPTIONS : []), ...profiling(key), '--require', PROBE];
  const { child } = spawnDaemon(config, port, { nodeOptions: options, bundle, ipc: true, cwd: work, node: NODE, start });
  await waitForAnswer(port, '/rest/all', child);
  return { child, port };
}

/** Reads served by a process's simulators, or (built-in controller) the daemon's bus requests. */
async function pollsOf(entry) {
  if (entry.sims.length > 0) {
    let total = 0;
    for (const sim of entry.sims) {
      const stats = await (await fetch(`${sim.controlUrl}/stats`)).json();
      for (const unit of Object.values(stats)) total += unit.requests;
    }
    return total;
  }
  const metrics = (await get(entry.port, '/metrics')).body.toString('utf8');
  let total = 0;
  for (const [, value] of metrics.matchAll(/^iogate_bus_requests_total\{[^}]*\} (\d+)/gm)) total += Number(value);
  return total;
}

async function reading(entry) {
  const { pid } = entry.child;
  return { stat: cpuSeconds(pid), run: runSeconds(pid), polls: await pollsOf(entry), probe: await askProbe(entry.child, { probe: 'snapshot' }, 'snapshot'), at: performance.now() };
}

// ---------------------------------------------------------------- start

if (process.platform !== 'linux') throw new Error('bench:idle reads /proc: Linux only');
log('starting the daemons, the bare pollers and their simulators');
const benchTcp = await benchConfigOverTcp('bench-config');
const benchPlan = readPlan(benchTcp.file);
const defaultPlan = readPlan(null).filter((bus) => bus.slaves.length > 0);
const CONFIGS = new Set(args.configs.split(','));
if (!CONFIGS.has('bench')) throw new Error('--configs: the bench pair is always run (its ratio is the result)');
const STARTS = new Set(args.starts.split(','));
if (!STARTS.has('unit') || [...STARTS].some((start) => !['unit', 'plain', 'program'].includes(start))) {
  throw new Error('--starts: a list of unit, plain and program, with unit');
}
// Run as a program, the bundle's #! line picks the node on PATH, not --node's command.
if (args.node && STARTS.delete('program')) log('--node: the bundle run as a program (./iogate.js) is left out');
const OTHER_STARTS = [
  ['plain', 'Plain', 'started as `node iogate.js` (no options)'],
  ['program', 'Program', 'run as a program (`./iogate.js`)'],
].filter(([start]) => STARTS.has(start));

const entries = [];
entries.push({ key: 'daemon', label: 'iogate, bench config (Modbus TCP simulators)', sims: benchTcp.sims, ...(await daemonWith('daemon', benchTcp.file)) });
entries.push({ key: 'bare', label: 'bare poller, same reads', ...(await bareFor('bench', benchPlan)) });
if (CONFIGS.has('default')) {
  entries.push({ key: 'default', label: 'iogate, built-in simulated controller (in-process boards and owserver)', sims: [], ...(await daemonWith('default', null)) });
  entries.push({ key: 'bareDefault', label: 'bare poller, same reads as the built-in controller', ...(await bareFor('default', defaultPlan)) });
}
for (const [start, suffix, how] of OTHER_STARTS) {
  const tcp = await benchConfigOverTcp(`bench-${start}`);
  entries.push({ key: `daemon${suffix}`, label: `iogate, bench config, ${how}`, sims: tcp.sims, ...(await daemonWith(`daemon${suffix}`, tcp.file, { start })) });
  if (CONFIGS.has('default')) {
    entries.push({ key: `default${suffix}`, label: `iogate, built-in controller, ${how}`, sims: [], ...(await daemonWith(`default${suffix}`, null, { start })) });
  }
}
if (args.baseline) {
  const baselineTcp = await benchConfigOverTcp('baseline');
  entries.push({ key: 'baseline', label: `baseline build (${args.baseline}), bench config`, sims: baselineTcp.sims, ...(await daemonWith('baseline', baselineTcp.file, { bundle: args.baseline })) });
}
log(`past start-up and first compilations: waiting ${IDLE_AFTER_S} s`);
await sleep(IDLE_AFTER_S * 1000);

// ---------------------------------------------------------------- rounds

const roundSeconds = SECONDS / ROUNDS;
const rounds = [];
let memory = entries.map((entry) => memoryOf(entry.child.pid));
for (let round = 0; round < ROUNDS; round++) {
  // Each round reads the processes in another order.
  const order = entries.map((_, i) => (i + round) % entries.length);
  const load = loadavg()[0];
  const before = [];
  for (const i of order) before[i] = await reading(entries[i]);
  log(`round ${round + 1}/${ROUNDS}: ${fmt(roundSeconds, 1)} s (load average ${fmt(load, 2)})`);
  await sleep(roundSeconds * 1000);
  const after = [];
  for (const i of order) after[i] = await reading(entries[i]);
  memory = memory.map((seen, i) => maxMemory(seen, memoryOf(entries[i].child.pid)));
  rounds.push({ load, figures: entries.map((_, i) => delta(before[i], after[i])) });
}

function delta(a, b) {
  const seconds = (b.at - a.at) / 1000;
  const elu = (b.probe.elu.active - a.probe.elu.active) / (b.probe.elu.active - a.probe.elu.active + b.probe.elu.idle - a.probe.elu.idle);
  return {
    seconds,
    statMs: (b.stat - a.stat) * 1000,
    runMs: (b.run - a.run) * 1000,
    polls: b.polls - a.polls,
    elu,
    timers: b.probe.timersStarted - a.probe.timersStarted,
    timersAlive: b.probe.timersAlive,
    minorGc: b.probe.gc.minor - a.probe.gc.minor,
    majorGc: b.probe.gc.major - a.probe.gc.major,
    gcMs: b.probe.gc.ms - a.probe.gc.ms,
  };
}

// ---------------------------------------------------------------- allocations

let allocations = entries.map(() => undefined);
if (ALLOCATION_S > 0) {
  log(`allocation window: ${ALLOCATION_S} s with the sampling heap profiler on`);
  const pollsBefore = await Promise.all(entries.map(pollsOf));
  await Promise.all(entries.map((entry) => askProbe(entry.child, { probe: 'start-allocations', samplingInterval: 256 }, 'started')));
  await sleep(ALLOCATION_S * 1000);
  const profiles = await Promise.all(entries.map((entry) => askProbe(entry.child, { probe: 'stop-allocations', top: 10 }, 'allocations')));
  const pollsAfter = await Promise.all(entries.map(pollsOf));
  allocations = profiles.map((profile, i) => ({ ...profile, polls: pollsAfter[i] - pollsBefore[i] }));
}
for (const entry of entries) await stop(entry.child);
await Promise.all(entries.flatMap((entry) => entry.sims.map((sim) => stop(sim.child))));

// ---------------------------------------------------------------- figures

const sum = (i, key) => rounds.reduce((total, round) => total + round.figures[i][key], 0);
const perKpoll = (i, key) => (sum(i, key) / sum(i, 'polls')) * 1000;
const measured = sum(0, 'seconds');
const summary = entries.map((entry, i) => ({
  key: entry.key,
  label: entry.label,
  cpuPercent: (sum(i, 'runMs') / (sum(i, 'seconds') * 1000)) * 100,
  runMsPerKpoll: perKpoll(i, 'runMs'),
  statMsPerKpoll: perKpoll(i, 'statMs'),
  pollsPerS: sum(i, 'polls') / sum(i, 'seconds'),
  elu: rounds.reduce((total, round) => total + round.figures[i].elu * round.figures[i].seconds, 0) / sum(i, 'seconds'),
  timersPerPoll: sum(i, 'timers') / sum(i, 'polls'),
  timersAlive: rounds.at(-1).figures[i].timersAlive,
  minorGcPerKpoll: perKpoll(i, 'minorGc'),
  majorGcPerKpoll: perKpoll(i, 'majorGc'),
  gcMsPerKpoll: perKpoll(i, 'gcMs'),
  memory: memory[i],
  bytesPerPoll: allocations[i] ? allocations[i].bytes / allocations[i].polls : null,
  promisesPerPoll: allocations[i] ? allocations[i].promises / allocations[i].polls : null,
  topAllocations: allocations[i]?.top ?? [],
  // Per round: this process's CPU per 1,000 polls.
  rounds: rounds.map((round) => (round.figures[i].runMs / round.figures[i].polls) * 1000),
}));
const byKey = Object.fromEntries(summary.map((row) => [row.key, row]));
const ratioOf = (a, b) => byKey[a].runMsPerKpoll / byKey[b].runMsPerKpoll;
const roundRatios = (a, b) => byKey[a].rounds.map((value, r) => value / byKey[b].rounds[r]);
const ratio = ratioOf('daemon', 'bare');
const defaultRatio = byKey.default ? ratioOf('default', 'bareDefault') : null;

const lines = [];
const out = (line = '') => lines.push(line);
out(`${new Date().toISOString()}: ${args.node ? `measured processes run by ${args.node}; ` : ''}${fmt(measured, 0)} s side by side in ${ROUNDS} rounds, ${IDLE_AFTER_S} s after start-up; load average ${rounds.map((round) => fmt(round.load, 2)).join(', ')}; node ${NODE_OPTIONS.join(' ')}`);
out();
out('| process | CPU, % of a core | CPU ms per 1,000 polls (schedstat) | (/proc stat) | polls/s | event loop busy | timers started per poll | timers alive | scavenges / major GCs per 1,000 polls | GC ms per 1,000 polls | bytes allocated per poll | promises per poll | RSS, MB (anon + file), max |');
out('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const row of summary) {
  out(
    `| ${row.label} | ${fmt(row.cpuPercent, 2)} | ${fmt(row.runMsPerKpoll, 1)} | ${fmt(row.statMsPerKpoll, 1)} | ${fmt(row.pollsPerS, 1)} | ${fmt(row.elu * 100, 2)} % | ${fmt(row.timersPerPoll, 2)} | ${row.timersAlive} | ${fmt(row.minorGcPerKpoll, 2)} / ${fmt(row.majorGcPerKpoll, 2)} | ${fmt(row.gcMsPerKpoll, 2)} | ${fmt(row.bytesPerPoll, 0)} | ${fmt(row.promisesPerPoll, 2)} | ${memoryCell(row.memory)} |`,
  );
}
out();
const rangeOf = (values) => `${fmt(Math.min(...values), 2)}–${fmt(Math.max(...values), 2)}`;
out(`CPU per poll, iogate (bench config) / bare poller: ${fmt(ratio, 2)}× (rounds ${rangeOf(roundRatios('daemon', 'bare'))})`);
if (byKey.default) out(`CPU per poll, iogate (built-in controller) / bare poller: ${fmt(defaultRatio, 2)}× (rounds ${rangeOf(roundRatios('default', 'bareDefault'))})`);
if (byKey.baseline) out(`CPU per poll, baseline build / iogate (bench config): ${fmt(ratioOf('baseline', 'daemon'), 2)}× (rounds ${rangeOf(roundRatios('baseline', 'daemon'))}); baseline / bare poller: ${fmt(ratioOf('baseline', 'bare'), 2)}×`);
// Private memory by how the daemon is started: what a copied bundle gets against the unit.
const anon = (key) => byKey[key]?.memory.anonMb;
const startFigures = (prefix) =>
  [['unit', prefix === 'daemon' ? 'daemon' : 'default', "the unit's options"], ...OTHER_STARTS.map(([start, suffix, how]) => [start, `${prefix}${suffix}`, how])]
    .filter(([, key]) => byKey[key])
    .map(([, key, how]) => `${how} ${fmt(anon(key), 1)} MB${key === 'daemon' || key === 'default' ? '' : ` (CPU per poll ${fmt(ratioOf(key, prefix), 2)}× the unit's)`}`)
    .join('; ');
if (OTHER_STARTS.length > 0) {
  out();
  out(`RssAnon idle (largest over the rounds), bench config: ${startFigures('daemon')}`);
  if (byKey.default) out(`RssAnon idle (largest over the rounds), built-in controller: ${startFigures('default')}`);
}
if (ALLOCATION_S > 0) {
  for (const row of summary) {
    if (row.topAllocations.length === 0) continue;
    out();
    out(`Allocations of ${row.label} (sampling heap profiler, ${ALLOCATION_S} s), bytes per poll by function:`);
    const polls = allocations[summary.indexOf(row)].polls;
    for (const [site, bytes] of row.topAllocations) out(`- ${fmt(bytes / polls, 0)} ${site}`);
  }
}
const result = {
  daemon_cpu_ms_per_kpoll: round2(byKey.daemon.runMsPerKpoll),
  bare_cpu_ms_per_kpoll: round2(byKey.bare.runMsPerKpoll),
  ratio: round2(ratio),
  polls_per_s: round2(byKey.daemon.pollsPerS),
  bare_polls_per_s: round2(byKey.bare.pollsPerS),
  ...(byKey.default
    ? {
        default_cpu_ms_per_kpoll: round2(byKey.default.runMsPerKpoll),
        default_bare_cpu_ms_per_kpoll: round2(byKey.bareDefault.runMsPerKpoll),
        default_ratio: round2(defaultRatio),
        default_polls_per_s: round2(byKey.default.pollsPerS),
      }
    : {}),
  ...(args['scan-hz'] ? { scan_hz: Number(args['scan-hz']) } : {}),
  ...(byKey.baseline ? { baseline_cpu_ms_per_kpoll: round2(byKey.baseline.runMsPerKpoll), baseline_ratio: round2(ratioOf('baseline', 'bare')) } : {}),
  // RssAnon idle, MB, by how the daemon was started (unit: the service unit's options).
  anon_mb: Object.fromEntries(
    ['daemon', 'daemonPlain', 'daemonProgram', 'default', 'defaultPlain', 'defaultProgram']
      .filter((key) => byKey[key])
      .map((key) => [{ daemon: 'unit', daemonPlain: 'plain', daemonProgram: 'program', default: 'default_unit', defaultPlain: 'default_plain', defaultProgram: 'default_program' }[key], round2(anon(key))]),
  ),
  seconds: Math.round(measured),
  rounds: ROUNDS,
};
function round2(value) {
  return Math.round(value * 100) / 100;
}
console.log(lines.join('\n'));
console.log(JSON.stringify(result));
const name = process.env.BENCH_OUT ?? 'idle';
if (name !== '-') {
  writeFileSync(join(RESULTS, `${name}.md`), `${lines.join('\n')}\n`);
  writeFileSync(join(RESULTS, `${name}.json`), `${JSON.stringify({ ...result, machine: machineFacts({ threads: 0, connections: 0, seconds: SECONDS, nodeOptions: NODE_OPTIONS, rounds: ROUNDS }), processes: summary }, null, 2)}\n`);
}
if (MAX_RATIO !== undefined && !(ratio <= MAX_RATIO)) {
  console.error(`bench:idle: FAIL: the daemon's CPU per poll is ${fmt(ratio, 2)}× the bare poller's, above the bound of ${MAX_RATIO}×`);
  process.exit(1);
}
