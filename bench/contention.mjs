// `npm run bench:contention`: tail latency when the controller is busy.
//
// A PLC that also runs Node-RED or Mervis is a contended machine. This bench
// runs the built daemon (node options of deploy/iogate.service) against two
// iogate-sim Modbus TCP slaves on loopback (the boards of bench/config.yaml),
// and the bare node:http server (bench/bare-server.mjs) beside it, and
// measures both on the same routes:
//   - GET /rest/do/1_01 and GET /rest/all with wrk;
//   - change → WebSocket client: an input flipped on the simulated board
//     (through its control endpoint) until each of N clients has the push,
//     timed from the simulator's register write (its reply carries the time,
//     on the monotonic clock all processes share) to each client's handler.
//     The bare server polls that input's register at the same rate and
//     pushes a fixed device JSON, so it is the floor for the same scan period.
// first on a quiet machine (one round), then while BENCH_BURNERS busy
// processes at normal priority compete for the cores (BENCH_ROUNDS rounds).
// Rounds alternate which server goes first, so other work on the machine
// hits both; figures are medians over the rounds, and the table gives the
// iogate / bare ratio. Memory (RSS = RssAnon + RssFile) is read idle, as the
// maximum under load, and BENCH_SETTLE seconds after the load.
//
// Environment:
//   BENCH_DURATION     seconds per wrk run (default 10)
//   BENCH_ROUNDS       contended rounds (default 3)
//   BENCH_THREADS, BENCH_CONNECTIONS  wrk -t / -c (default 2 / 16)
//   BENCH_WS_CLIENTS   WebSocket clients for the change benchmark (default 100)
//   BENCH_SAMPLES      input changes per change benchmark (default 200)
//   BENCH_BURNERS      competing busy processes (default 2)
//   BENCH_SETTLE       seconds after the load before memory is read again (default 30)
//   BENCH_IDLE_AFTER   seconds from start-up to the idle window (default 12)
//   BENCH_INPUT_HZ     input_scan_frequency of the board whose input flips (default: off);
//                      the bare server then polls at this rate too
//   BENCH_NODE_OPTIONS node options for the daemon instead of the service's (experiments)
//   BENCH_SCENARIOS    comma-separated subset of getSingle,getAll,events (default: all)
//   BENCH_OUT          results file name in bench/results (default contention)
import { fork, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  BUNDLE,
  NO_MEMORY,
  RESULTS,
  SIM_BUNDLE,
  captureReply,
  cpuSeconds,
  ensureWrk,
  fmt,
  freePort,
  IDLE_AFTER_S,
  log,
  maxMemory,
  median,
  memoryCell,
  memoryOf,
  memorySampler,
  percentiles,
  positive,
  ratio,
  runWrk,
  serviceNodeOptions,
  spawnBare,
  spawnDaemon,
  startContentionBoards,
  stop,
  waitForAnswer,
  machineFacts,
  messageQueue,
} from './common.mjs';

const DURATION_S = positive('BENCH_DURATION', 10);
const ROUNDS = positive('BENCH_ROUNDS', 3);
const THREADS = positive('BENCH_THREADS', 2);
const CONNECTIONS = positive('BENCH_CONNECTIONS', 16);
const WS_CLIENTS = positive('BENCH_WS_CLIENTS', 100);
const SAMPLES = positive('BENCH_SAMPLES', 200);
const BURNERS = positive('BENCH_BURNERS', 2);
const SETTLE_S = positive('BENCH_SETTLE', 30);
const INPUT_HZ = Number(process.env.BENCH_INPUT_HZ ?? 0);
const SCAN_HZ = 50;
const WARMUP_S = Math.min(2, DURATION_S);
const NODE_OPTIONS = process.env.BENCH_NODE_OPTIONS !== undefined ? process.env.BENCH_NODE_OPTIONS.split(/\s+/).filter(Boolean) : serviceNodeOptions();
const OUT = process.env.BENCH_OUT ?? 'contention';
const ONLY = process.env.BENCH_SCENARIOS?.split(',');

// The input that flips: DI 1_01 of the brain board (unit 1 on the first simulator), bit 0 of register 0.
const INPUT = { unit: 1, register: 0, bit: 0, dev: 'di', circuit: '1_01' };

if (process.argv[2] === '--clients') await runClients();
else await main();

async function main() {
  for (const file of [BUNDLE, SIM_BUNDLE]) {
    if (!existsSync(file)) throw new Error(`${file} is missing; run \`node build.mjs\` first (npm run bench:contention does)`);
  }
  ensureWrk();
  const machine = {
    ...machineFacts({ threads: THREADS, connections: CONNECTIONS, seconds: DURATION_S, nodeOptions: NODE_OPTIONS, rounds: ROUNDS }),
    burners: BURNERS,
    wsClients: WS_CLIENTS,
    samples: SAMPLES,
    inputHz: INPUT_HZ,
    date: new Date().toISOString(),
    loadAverageBefore: loadavg()[0],
  };
  log(`node ${machine.node} ${machine.nodeOptions}, ${machine.cores} × ${machine.cpu}; wrk ${machine.wrkArgs}`);

  // The boards of bench/config.yaml, served over Modbus TCP on loopback (as a Neuron reaches its local boards).
  // Whatever way this process ends, it takes its servers with it.
  const children = new Set();
  process.on('exit', () => {
    for (const child of children) child.kill();
  });
  const { simA, simB, config, work } = await startContentionBoards({ name: 'contention', scanHz: SCAN_HZ, inputHz: INPUT_HZ, wsClients: WS_CLIENTS });
  children.add(simA.child).add(simB.child);
  const port = await freePort();
  const daemon = spawnDaemon(config, port, { nodeOptions: NODE_OPTIONS });
  children.add(daemon.child);
  await waitForAnswer(port, '/rest/do/1_01', daemon.child);

  const paths = { getSingle: '/rest/do/1_01', getAll: '/rest/all' };
  const replies = {};
  for (const path of Object.values(paths)) {
    const { headers, body } = await captureReply(port, path);
    replies[path] = { headers, body };
  }
  const device = JSON.parse((await captureReply(port, `/rest/${INPUT.dev}/${INPUT.circuit}`)).bytes.toString('utf8'));
  const devices = JSON.parse(Buffer.from(replies['/rest/all'].body, 'base64').toString('utf8')).length;
  replies.events = { modbusPort: simA.tcpPort, unit: INPUT.unit, register: INPUT.register, bit: INPUT.bit, hz: INPUT_HZ || SCAN_HZ, device };
  writeFileSync(join(work, 'replies.json'), JSON.stringify(replies));
  const barePort = await freePort();
  const bare = await spawnBare(barePort, join(work, 'replies.json'));
  children.add(bare);

  const targets = {
    iogate: { label: 'iogate', child: daemon.child, port, memory: NO_MEMORY },
    bare: { label: 'bare node:http', child: bare, port: barePort, memory: NO_MEMORY },
  };

  log(`idle, ${DURATION_S} s, after ${IDLE_AFTER_S} s of settling`);
  await sleep(IDLE_AFTER_S * 1000);
  const cpuFrom = { iogate: cpuSeconds(daemon.child.pid), bare: cpuSeconds(bare.pid) };
  const idleFrom = performance.now();
  await sleep(DURATION_S * 1000);
  const idleS = (performance.now() - idleFrom) / 1000;
  const idle = {};
  for (const [key, target] of Object.entries(targets)) {
    idle[key] = { memory: memoryOf(target.child.pid), cpuPercent: ((cpuSeconds(target.child.pid) - cpuFrom[key]) / idleS) * 100 };
  }

  const clients = fork(fileURLToPath(import.meta.url), ['--clients'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  children.add(clients);
  const clientReplies = messageQueue(clients);

  const scenarios = [
    { key: 'getSingle', label: `GET ${paths.getSingle}`, run: (target) => wrkRun(target, paths.getSingle) },
    { key: 'getAll', label: `GET /rest/all (${devices} devices)`, run: (target) => wrkRun(target, paths.getAll) },
    {
      key: 'events',
      label: `change → WebSocket client (${WS_CLIENTS} clients)`,
      run: async (target) => {
        clients.send({ url: `ws://127.0.0.1:${target.port}/ws`, control: simA.controlUrl, clients: WS_CLIENTS, samples: SAMPLES, input: INPUT, periodMs: 1000 / SCAN_HZ });
        const { latencies, parts } = await clientReplies.next();
        const { p50, p99, max } = percentiles(latencies);
        // Where a flip's time goes: the control request, to the first client, and the fan-out to the last.
        const split = Object.fromEntries(Object.keys(parts[0]).map((part) => [part, percentiles(parts.map((sample) => sample[part]))]));
        log(`  ${Object.entries(split).map(([part, { p50: a, p99: b }]) => `${part} p50 ${fmt(a, 2)} / p99 ${fmt(b, 2)} ms`).join('; ')}`);
        return { p50Ms: p50, p99Ms: p99, maxMs: max, split };
      },
    },
  ].filter((scenario) => !ONLY || ONLY.includes(scenario.key));
  /** One measured run of a scenario against a target, with its memory meanwhile. */
  const measure = async (scenario, target) => {
    const sampler = memorySampler(target.child.pid);
    const result = await scenario.run(target);
    target.memory = maxMemory(target.memory, sampler());
    return result;
  };

  const phases = [
    { key: 'quiet', label: 'quiet machine', rounds: 1, burners: 0 },
    { key: 'contended', label: `${BURNERS} busy processes`, rounds: ROUNDS, burners: BURNERS },
  ];
  const results = {};
  for (const phase of phases) {
    const burners = Array.from({ length: phase.burners }, () => spawn(process.execPath, ['-e', 'for (;;);'], { stdio: 'ignore' }));
    for (const burner of burners) children.add(burner);
    const runs = {};
    for (let round = 0; round < phase.rounds; round++) {
      // Alternate who goes first, so a burst of other work does not always hit the same side.
      const order = round % 2 === 0 ? ['iogate', 'bare'] : ['bare', 'iogate'];
      for (const scenario of scenarios) {
        for (const key of order) {
          log(`${phase.label}, round ${round + 1}: ${scenario.label}, ${targets[key].label}`);
          ((runs[scenario.key] ??= { iogate: [], bare: [] })[key]).push(await measure(scenario, targets[key]));
        }
      }
    }
    for (const burner of burners) await stop(burner);
    results[phase.key] = Object.fromEntries(
      scenarios.map((scenario) => [scenario.key, { label: scenario.label, iogate: summarise(runs[scenario.key].iogate), bare: summarise(runs[scenario.key].bare) }]),
    );
  }
  clients.kill();

  log(`memory ${SETTLE_S} s after the load`);
  await sleep(SETTLE_S * 1000);
  const memory = {};
  for (const [key, target] of Object.entries(targets)) {
    memory[key] = { idle: idle[key].memory, load: target.memory, after: memoryOf(target.child.pid) };
  }

  await Promise.all([stop(bare), stop(daemon.child), stop(simA.child), stop(simB.child)]);
  machine.loadAverageAfter = loadavg()[0];
  const report = { machine, devices, idle, memory, results };
  report.targets = judge(report);
  writeFileSync(join(RESULTS, `${OUT}.json`), JSON.stringify(report, null, 2) + '\n');
  writeFileSync(join(RESULTS, `${OUT}.md`), markdown(report));
  process.stdout.write(markdown(report));
  log(`wrote ${join(RESULTS, `${OUT}.md`)} and ${OUT}.json`);
}

async function wrkRun(target, path) {
  const url = `http://127.0.0.1:${target.port}${path}`;
  const options = { threads: THREADS, connections: CONNECTIONS };
  // A short unmeasured run first, so no server is measured while its handlers are still being compiled.
  await runWrk(url, { ...options, seconds: WARMUP_S });
  return runWrk(url, { ...options, seconds: DURATION_S });
}

/** Medians over the rounds, and every round's p99 so the spread shows. */
function summarise(runs) {
  return {
    rps: median(runs.map((run) => run.rps)),
    p50Ms: median(runs.map((run) => run.p50Ms)),
    p99Ms: median(runs.map((run) => run.p99Ms)),
    roundsP99Ms: runs.map((run) => run.p99Ms),
    non2xx: runs.reduce((sum, run) => sum + (run.non2xx ?? 0), 0),
    splits: runs.map((run) => run.split).filter(Boolean),
  };
}

function judge(r) {
  const targets = [];
  for (const key of ['getSingle', 'getAll']) {
    if (!r.results.contended[key]) continue;
    const { label, iogate, bare } = r.results.contended[key];
    const value = iogate.p99Ms / bare.p99Ms;
    targets.push({ name: `${label} p99 under contention vs bare node:http`, value, limit: 2, unit: '×', pass: value <= 2 });
  }
  const { idle, load, after } = r.memory.iogate;
  targets.push({ name: 'private memory (RssAnon) idle', value: idle.anonMb, limit: 16, unit: 'MB', pass: idle.anonMb <= 16 });
  targets.push({ name: 'private memory (RssAnon) under load', value: load.anonMb, limit: 24, unit: 'MB', pass: load.anonMb <= 24 });
  const kept = after.anonMb - idle.anonMb;
  targets.push({ name: `private memory ${SETTLE_S} s after the load, above idle`, value: kept, limit: 2, unit: 'MB', pass: kept <= 2 });
  if (INPUT_HZ > 0 && r.results.contended.events) {
    const { p99Ms } = r.results.contended.events.iogate;
    const quiet = r.results.quiet.events.iogate.p99Ms;
    targets.push({ name: `change → client p99 at ${WS_CLIENTS} clients, inputs at ${INPUT_HZ} Hz, quiet machine`, value: quiet, limit: 6, unit: 'ms', pass: quiet <= 6 });
    targets.push({ name: `… under contention (no target; for reference)`, value: p99Ms, limit: Infinity, unit: 'ms', pass: true });
  }
  return targets;
}

function markdown(r) {
  const m = r.machine;
  const rows = ['| Measure | iogate | bare node:http | iogate / bare |', '| --- | ---: | ---: | ---: |'];
  const row = (...cells) => rows.push(`| ${cells.join(' | ')} |`);
  for (const [phaseKey, phase] of Object.entries(r.results)) {
    const where = phaseKey === 'quiet' ? 'quiet' : `${m.burners} busy processes`;
    for (const { label, iogate, bare } of Object.values(phase)) {
      row(`${label}, ${where}: p50 / p99 ms`, `${fmt(iogate.p50Ms, 2)} / ${fmt(iogate.p99Ms, 2)}`, `${fmt(bare.p50Ms, 2)} / ${fmt(bare.p99Ms, 2)}`, ratio(iogate.p99Ms, bare.p99Ms));
      if (iogate.rps) row(`${label}, ${where}: req/s`, fmt(iogate.rps), fmt(bare.rps), ratio(iogate.rps, bare.rps));
      if (iogate.roundsP99Ms.length > 1) row(`${label}, ${where}: p99 of each round ms`, iogate.roundsP99Ms.map((ms) => fmt(ms, 1)).join(', '), bare.roundsP99Ms.map((ms) => fmt(ms, 1)).join(', '), '');
      const splitCell = (side) => side.splits.map((split) => Object.values(split).map(({ p99 }) => fmt(p99, 1)).join(' / ')).join('; ');
      if (iogate.splits.length) row(`${label}, ${where}: p99 of flip request / first client / first → last / client handlers, each round ms`, splitCell(iogate), splitCell(bare), '');
    }
  }
  const { iogate, bare } = r.memory;
  row('RSS (RssAnon + RssFile) idle MB', memoryCell(iogate.idle), memoryCell(bare.idle), ratio(iogate.idle.anonMb, bare.idle.anonMb) + ' private');
  row('RSS (RssAnon + RssFile) under load (max) MB', memoryCell(iogate.load), memoryCell(bare.load), ratio(iogate.load.anonMb, bare.load.anonMb) + ' private');
  row(`RSS (RssAnon + RssFile) ${SETTLE_S} s after the load MB`, memoryCell(iogate.after), memoryCell(bare.after), ratio(iogate.after.anonMb, bare.after.anonMb) + ' private');
  row('CPU idle, % of a core', fmt(r.idle.iogate.cpuPercent, 2), fmt(r.idle.bare.cpuPercent, 2), '');

  const targets = ['| Target | Limit | Measured | Result |', '| --- | ---: | ---: | --- |'];
  for (const t of r.targets) {
    const limit = t.limit === Infinity ? '–' : `≤ ${t.limit} ${t.unit}`;
    targets.push(`| ${t.name} | ${limit} | ${fmt(t.value, 2)} ${t.unit} | ${t.pass ? 'pass' : '**miss**'} |`);
  }
  return `# iogate under CPU contention

${m.date} · Node ${m.node} \`${m.nodeOptions}\` · ${m.cores} × ${m.cpu} · ${m.wrk} \`${m.wrkArgs}\` · ${m.burners} busy processes · medians of ${m.rounds} alternating rounds · load average ${fmt(m.loadAverageBefore, 2)} before, ${fmt(m.loadAverageAfter, 2)} after

Daemon: \`dist/iogate.js\`, ${r.devices} devices on five simulated boards behind two \`iogate-sim\` Modbus TCP slaves on loopback, ${SCAN_HZ} Hz scans${m.inputHz ? `, \`input_scan_frequency: ${m.inputHz}\` on the board whose input flips` : ''}. Bare server: \`bench/bare-server.mjs\` (same reply bytes; for changes it polls the input's register at ${m.inputHz || SCAN_HZ} Hz and pushes one fixed device JSON). Change → client: ${m.samples} input flips, ${m.wsClients} clients in one other process, from the simulator's register write to each client's message handler.

${rows.join('\n')}

${targets.join('\n')}
`;
}

/**
 * The client side, in its own process: for each request from the parent,
 * connect the clients, flip the input `samples` times at random phases of the
 * scan period, and report each client's latency of each flip.
 */
async function runClients() {
  const { default: WebSocket } = await import('ws');
  // CLOCK_MONOTONIC in ms, the clock of the simulator's write stamps too.
  const now = () => Number(process.hrtime.bigint()) / 1e6;
  process.on('message', async ({ url, control, clients, samples, input, periodMs }) => {
    const sockets = await Promise.all(
      Array.from({ length: clients }, async () => {
        const ws = new WebSocket(url, { perMessageDeflate: false });
        await once(ws, 'open');
        return ws;
      }),
    );
    let expected;
    let changedAt = 0;
    let arrived = 0;
    let done;
    const latencies = [];
    // Per flip: the control request's round trip (not part of the latency), the first and the last
    // client's latency, and the time this process spent in the message handlers meanwhile (parsing:
    // part of first → last).
    const parts = [];
    let first = 0;
    let handling = 0;
    // Messages that arrive before the flip request returns are kept and timed once it has.
    const early = [];
    const arrive = (at) => {
      latencies.push(at - changedAt);
      if (arrived === 0) first = at - changedAt;
      if (++arrived === clients) done(at - changedAt);
    };
    for (const ws of sockets) {
      ws.on('message', (data) => {
        const at = now();
        if (expected === undefined) return;
        const device = JSON.parse(data).find?.((item) => item.dev === input.dev && item.circuit === input.circuit);
        handling += now() - at;
        if (device?.value !== expected) return;
        if (changedAt === 0) {
          early.push(at);
          return;
        }
        arrive(at);
      });
    }
    let value = Number(await readInput(control, input));
    for (let i = 0; i < samples; i++) {
      // A random phase against the scan grid, so the wait for the next scan is sampled evenly.
      await sleep(Math.random() * periodMs);
      value ^= 1;
      expected = value;
      arrived = 0;
      const all = new Promise((resolve) => (done = resolve));
      handling = 0;
      changedAt = 0;
      const requestedAt = now();
      changedAt = await setInput(control, input, value);
      const request = now() - requestedAt;
      for (const at of early.splice(0).sort((a, b) => a - b)) arrive(at);
      const last = await all;
      expected = undefined;
      parts.push({ request, first, firstToLast: last - first, clientHandlers: handling });
    }
    await Promise.all(sockets.map((ws) => (ws.close(), once(ws, 'close'))));
    process.send({ latencies, parts });
  });
}

async function readInput(control, { unit, register, bit }) {
  const response = await fetch(`${control}/registers?unit=${unit}&space=holding&address=${register}&count=1`);
  const { values } = await response.json();
  return (values[0] >> bit) & 1;
}

async function setInput(control, { unit, register, bit }, value) {
  const response = await fetch(`${control}/registers`, {
    method: 'POST',
    body: JSON.stringify({ unit, space: 'holding', address: register, values: [value << bit] }),
  });
  if (!response.ok) throw new Error(`simulator control: ${response.status} ${await response.text()}`);
  // When the simulator set the register, in ms on CLOCK_MONOTONIC.
  return Number(BigInt((await response.json()).at)) / 1e6;
}
