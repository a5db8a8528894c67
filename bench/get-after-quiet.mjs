// `npm run bench:get-quiet`: what a quiet spell does to the GET hot path.
//
// bench:get keeps every server alive and measures them in turn, so each one
// sits idle while the others are measured, and what happens to a process in
// those idle spells (the daemon's quiet collections, V8's own collections)
// is mixed into its figures. Here one server lives at a time: it starts,
// is warmed up, measured once ("before"), and then measured again after each
// of --quiet-spells spells of --quiet seconds without requests ("after").
// During a spell wrk loads the bare server instead (--quiet-load, the default)
// as bench:get does, or nothing (--no-quiet-load).
//
// Configurations (repeated --reps times, interleaved, each in a fresh process):
//   the daemon with the service unit's node options, always;
//   --variant 'name=--opt --opt'  the daemon with these node options ('' = none);
//   --drop 'name=--opt,--opt'     the daemon with the unit's options less these;
//   --bare-gc                     the bare server with the unit's options and
//                                 V8's gc() twice at the start of each spell,
//                                 as the daemon's quiet collections do;
//   --bare-poll                   the same, polling the daemon's read plan in
//                                 the same process (bench/bare-poller.mjs
//                                 against simulators of its own over Modbus
//                                 TCP): the yardstick for a process that
//                                 polls its buses as it serves.
// --buses tcp: the daemon's SIMULATOR lines are served by iogate-sim processes
// over Modbus TCP (as bench:idle does) instead of in-memory lines in the
// daemon's own process, so its CPU is its own work and not the simulator's.
// --buses memory,tcp runs the daemon with the unit's options both ways (the
// second as 'iogate-tcp'); variants and drops take the first.
// --start-idle S: each process first sits S seconds without requests after
// start-up (as a daemon does between boot and its first client), then the
// warm-up. The spell's load follows --quiet-load.
// Per round: CPU per request split into user and system time (/proc/<pid>/stat).
// `--pin` puts the server on
// CPU 0 and wrk on CPU 1, for steadier figures on a 2-core machine.
// Ends with one JSON line: per configuration, the medians before and after.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  BENCH_DIR,
  BENCH_TOGGLE_MS,
  bareCollect,
  barePollPlan,
  captureReply,
  collectsLikeTheDaemon,
  configOverTcp,
  cpuTimes,
  ensureWrk,
  fmt,
  freePort,
  log,
  median,
  namedSpec,
  optionWords,
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
    reps: { type: 'string', default: '3' },
    seconds: { type: 'string', default: '5' },
    quiet: { type: 'string', default: '15' },
    'quiet-spells': { type: 'string', default: '3' },
    'start-idle': { type: 'string', default: '0' },
    'quiet-load': { type: 'boolean', default: true },
    variant: { type: 'string', multiple: true, default: [] },
    drop: { type: 'string', multiple: true, default: [] },
    'bare-gc': { type: 'boolean', default: false },
    'bare-poll': { type: 'boolean', default: false },
    buses: { type: 'string', default: 'memory' },
    pin: { type: 'boolean', default: false },
    path: { type: 'string', default: '/rest/do/1_01' },
  },
  allowNegative: true,
});
const REPS = Math.max(1, Math.round(Number(args.reps)));
const SECONDS = Number(args.seconds);
const QUIET_S = Number(args.quiet);
const SPELLS = Math.max(1, Math.round(Number(args['quiet-spells'])));
const START_IDLE_S = Number(args['start-idle']);
if (!(SECONDS > 0) || !(QUIET_S >= 0) || !(START_IDLE_S >= 0)) throw new Error('--seconds, --quiet and --start-idle take positive numbers');
const BUSES = args.buses.split(',');
if (BUSES.length === 0 || BUSES.some((mode) => !['memory', 'tcp'].includes(mode))) throw new Error('--buses takes memory, tcp or both');
const work = tempDir('iogate-get-quiet-');
const BENCH_CONFIG = join(BENCH_DIR, 'config.yaml');
/** The bench config for each bus mode. */
const CONFIG_OF = { memory: BENCH_CONFIG };
if (BUSES.includes('tcp')) {
  const over = await configOverTcp(BENCH_CONFIG, join(work, 'config-tcp.yaml'), { toggleMs: BENCH_TOGGLE_MS });
  CONFIG_OF.tcp = over.file;
}
const CONFIG = CONFIG_OF[BUSES[0]];
const UNIT = serviceNodeOptions();

const configs = [
  ...BUSES.map((mode, i) => ({ name: i === 0 ? 'iogate' : `iogate-${mode}`, config: CONFIG_OF[mode], buses: mode, nodeOptions: UNIT })),
  ...args.variant.map((spec) => {
    const [name, options] = namedSpec(spec);
    return { name, nodeOptions: optionWords(options) };
  }),
  ...args.drop.map((spec) => {
    const [name, options] = namedSpec(spec);
    const dropped = new Set(options.split(','));
    return { name, nodeOptions: UNIT.filter((option) => !dropped.has(option)) };
  }),
  { name: 'bare', bare: true, nodeOptions: [] },
  ...(args['bare-gc'] ? [{ name: 'bare-gc', bare: true, nodeOptions: UNIT }] : []),
  ...(args['bare-poll'] ? [{ name: 'bare-poll-gc', bare: true, polls: true, nodeOptions: UNIT }] : []),
];

/** A bare server with gc() collects at the start of every spell, as the daemon does once a burst is over. */
const collectsInSpells = (config) => Boolean(config.bare) && collectsLikeTheDaemon(config.nodeOptions);
const planFile = args['bare-poll'] ? await barePollPlan(CONFIG, work) : undefined;

/** wrk, pinned to CPU 1 with --pin. */
function wrk(url, seconds) {
  return runWrk(url, { seconds, threads: 2, connections: 16, wrapper: args.pin ? ['taskset', '-c', '1'] : undefined });
}

function pin(pid) {
  if (!args.pin) return;
  const child = spawn('taskset', ['-a', '-pc', '0', String(pid)], { stdio: 'ignore' });
  return new Promise((resolve) => child.once('exit', resolve));
}

async function startServer(config, repliesFile) {
  const port = await freePort();
  let child;
  if (config.bare) {
    child = await spawnBare(port, repliesFile, config.nodeOptions, { planFile: config.polls ? planFile : undefined });
  } else {
    child = spawnDaemon(config.config ?? CONFIG, port, { nodeOptions: config.nodeOptions }).child;
    await waitForAnswer(port, args.path, child);
  }
  await pin(child.pid);
  return { child, url: `http://127.0.0.1:${port}${args.path}` };
}

async function measure(server) {
  const from = cpuTimes(server.child.pid);
  const result = await wrk(server.url, SECONDS);
  const to = cpuTimes(server.child.pid);
  const perRequest = (seconds) => (seconds * 1e6) / result.requests;
  return {
    userUs: perRequest(to.user - from.user),
    systemUs: perRequest(to.system - from.system),
    cpuUs: perRequest(to.user - from.user + to.system - from.system),
    rps: result.rps,
  };
}

async function main() {
  ensureWrk();
  const repliesFile = join(work, 'replies.json');
  {
    const port = await freePort();
    const { child } = spawnDaemon(CONFIG, port, {});
    await waitForAnswer(port, args.path, child);
    const reply = await captureReply(port, args.path);
    writeFileSync(repliesFile, JSON.stringify({ [args.path]: { headers: reply.headers, body: reply.body } }));
    await stop(child);
  }
  // The load during the spells goes to a bare server of its own, alive throughout.
  const loadPort = await freePort();
  const loadServer = await spawnBare(loadPort, repliesFile, []);
  const loadUrl = `http://127.0.0.1:${loadPort}${args.path}`;
  const loadBefore = loadavg()[0];
  log(`${configs.length} configurations × ${REPS}, one process at a time: ${START_IDLE_S > 0 ? `${START_IDLE_S} s idle, ` : ''}warm-up, a round, then ${SPELLS} × (${QUIET_S} s quiet${args['quiet-load'] ? ' with wrk on another server' : ''}, a round of ${SECONDS} s)`);

  const results = Object.fromEntries(configs.map((config) => [config.name, []]));
  const spell = async (seconds) => {
    if (args['quiet-load']) await wrk(loadUrl, seconds);
    else await sleep(seconds * 1000);
  };
  for (let rep = 1; rep <= REPS; rep++) {
    for (const config of configs) {
      const server = await startServer(config, repliesFile);
      if (START_IDLE_S > 0) await spell(START_IDLE_S);
      await wrk(server.url, 2);
      const rounds = [await measure(server)];
      for (let n = 0; n < SPELLS; n++) {
        if (collectsInSpells(config)) bareCollect(server.child);
        await spell(QUIET_S);
        rounds.push(await measure(server));
      }
      await stop(server.child);
      results[config.name].push(rounds);
      const cell = (r) => `${fmt(r.cpuUs, 1)} (u ${fmt(r.userUs, 1)})`;
      log(`${config.name.padEnd(12)} rep ${rep}: before ${cell(rounds[0])}  after ${rounds.slice(1).map(cell).join('  ')}`);
    }
  }
  await stop(loadServer);

  const summary = {};
  for (const config of configs) {
    const before = results[config.name].map((rounds) => rounds[0].cpuUs);
    const after = results[config.name].flatMap((rounds) => rounds.slice(1).map((r) => r.cpuUs));
    summary[config.name] = {
      node_flags: config.nodeOptions.join(' '),
      gc_in_spells: collectsInSpells(config),
      polls: config.bare ? Boolean(config.polls) : (config.buses ?? BUSES[0]),
      cpu_us_before: round2(median(before)),
      cpu_us_after: round2(median(after)),
      after_over_before: round2(median(after) / median(before)),
    };
  }
  const bareAfter = summary.bare.cpu_us_after;
  log('| configuration | µs CPU / request before a quiet spell | after | after / before | bare / it, after |');
  log('|---|---:|---:|---:|---:|');
  for (const [name, figures] of Object.entries(summary)) {
    log(`| ${name} | ${fmt(figures.cpu_us_before, 1)} | ${fmt(figures.cpu_us_after, 1)} | ${fmt(figures.after_over_before, 2)}× | ${fmt(bareAfter / figures.cpu_us_after, 2)}× |`);
  }
  console.log(JSON.stringify({ path: args.path, reps: REPS, seconds: SECONDS, quiet_s: QUIET_S, start_idle_s: START_IDLE_S, buses: BUSES, quiet_load: args['quiet-load'], pinned: args.pin, load_average: [loadBefore, loadavg()[0]].map(round2), configurations: summary }));
}

const round2 = (value) => Math.round(value * 100) / 100;

// An explicit exit: the simulators of --bare-poll would keep the process alive (they are stopped at exit).
main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
