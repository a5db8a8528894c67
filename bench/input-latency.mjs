// `npm run bench:input-latency`: input change → WebSocket clients, with
// `input_scan_frequency`, every part in its own process.
//
//   node bench/input-latency.mjs        (after node build.mjs)
//
// The built daemon (node options and environment of deploy/iogate.service)
// polls the boards of bench/contention.mjs on two `iogate-sim` Modbus TCP
// slaves on loopback: the brain board whose input flips shares its bus with
// two more boards, all at 50 Hz scans, and reads its inputs at BENCH_INPUT_HZ
// (default 500). The WebSocket clients live in one other process and only
// take the time a message reaches their handler (no parsing on that path).
// This process asks the simulator to flip the input a few ms later, from a
// timer of its own, as a wired input would change: by the time it does, the
// request and its reply are over, and this process only waits.
//
// What is measured: from the moment the simulator set the register (it
// stamps it; GET /changes) to the moment each client's message handler ran.
// Both are read on CLOCK_MONOTONIC (process.hrtime.bigint()), which every
// process of the machine shares. Split per flip: "read wait",
// change → the daemon's read that saw it (stamped by the simulator as it
// served the read); "read → first client"; "first → last client".
//
// Environment:
//   BENCH_INPUT_HZ   input_scan_frequency of the brain board (default 500; 0: scan only)
//   BENCH_CLIENTS    comma-separated client counts (default 1,100)
//   BENCH_SAMPLES    flips per client count and run (default 300)
//   BENCH_WARMUP     flips before those, not counted (default 30)
//   BENCH_RUNS       runs, each over every client count (default 3)
//   BENCH_OUT        results file name in bench/results (default input-latency)
//   BENCH_BUNDLE     the daemon bundle to run (default dist/iogate.js; to compare builds)
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { BUNDLE, RESULTS, SIM_BUNDLE, fmt, freePort, log, messageQueue, positive, serviceNodeOptions, spawnDaemon, startContentionBoards, stop, waitForAnswer, BENCH_INPUT, simInputControl } from './common.mjs';

const INPUT_HZ = Number(process.env.BENCH_INPUT_HZ ?? 500);
const CLIENTS = (process.env.BENCH_CLIENTS ?? '1,100').split(',').map(Number);
const SAMPLES = positive('BENCH_SAMPLES', 300);
/** Flips before each row's samples, not counted: the clients' process compiles its hot path on them. */
const WARMUP = Number(process.env.BENCH_WARMUP ?? 30);
const RUNS = positive('BENCH_RUNS', 3);
const OUT = process.env.BENCH_OUT ?? 'input-latency';
const DAEMON = process.env.BENCH_BUNDLE ?? BUNDLE;
const SCAN_HZ = 50;
/** The least time between the flip request's reply and the input changing. */
const FLIP_AFTER_MS = 5;
// DI 1_01 of the brain board: unit 1 on the first simulator, bit 0 of holding register 0.
const INPUT = BENCH_INPUT;

if (process.argv[2] === '--clients') runClients();
else await main();

async function main() {
  for (const file of [BUNDLE, SIM_BUNDLE]) if (!existsSync(file)) throw new Error(`${file} is missing; run \`node build.mjs\` first`);
  const children = new Set();
  process.on('exit', () => children.forEach((child) => child.kill()));
  const { simA, simB, config } = await startContentionBoards({ name: 'input-latency', scanHz: SCAN_HZ, inputHz: INPUT_HZ, wsClients: Math.max(...CLIENTS) });
  children.add(simA.child).add(simB.child);
  const port = await freePort();
  const daemon = spawnDaemon(config, port, { bundle: DAEMON });
  children.add(daemon.child);
  await waitForAnswer(port, '/rest/di/1_01', daemon.child);
  const clients = fork(fileURLToPath(import.meta.url), ['--clients'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  children.add(clients);
  const replies = messageQueue(clients);
  const control = simA.controlUrl;
  // The input changes from a timer in the simulator (simInputControl says why).
  const { flip, lastChange } = simInputControl(control, INPUT);
  const ms = (from, to) => Number(to - from) / 1e6;
  await sleep(3000);

  const date = new Date().toISOString();
  const loadBefore = loadavg()[0];
  const runs = [];
  let value = 0;
  await flip(value, 0);
  for (let run = 0; run < RUNS; run++) {
    for (const count of CLIENTS) {
      clients.send({ connect: `ws://127.0.0.1:${port}/ws`, count });
      await replies.next();
      const load = loadavg()[0];
      const all = [];
      const last = [];
      const parts = { readWait: [], readToFirst: [], firstToLast: [] };
      for (let i = -WARMUP; i < SAMPLES; i++) {
        value ^= 1;
        clients.send({ expect: INPUT.marker(value) });
        await replies.next(); // armed
        // A random phase against both the scan grid and the input reads' grid,
        // after a few ms in which this request is over.
        await flip(value, FLIP_AFTER_MS + Math.floor(Math.random() * (1000 / SCAN_HZ)));
        const arrivals = (await replies.next()).arrivals.map(BigInt);
        const { at, read } = await lastChange();
        if (i < 0) continue;
        for (const arrival of arrivals) all.push(ms(at, arrival));
        const first = arrivals.reduce((a, b) => (b < a ? b : a));
        const lastArrival = arrivals.reduce((a, b) => (b > a ? b : a));
        last.push(ms(at, lastArrival));
        if (read !== undefined) {
          parts.readWait.push(ms(at, read));
          parts.readToFirst.push(ms(read, first));
        }
        parts.firstToLast.push(ms(first, lastArrival));
      }
      clients.send({ disconnect: true });
      await replies.next();
      const row = { run: run + 1, clients: count, load, all: summary(all), last: summary(last), ...Object.fromEntries(Object.entries(parts).map(([key, values]) => [key, summary(values)])) };
      log(`run ${row.run}, ${count} client(s), load ${fmt(load, 2)}: p50 ${fmt(row.all.p50, 2)} / p99 ${fmt(row.all.p99, 2)} ms; read wait p99 ${fmt(row.readWait.p99, 2)}, read → first p99 ${fmt(row.readToFirst.p99, 2)}, first → last p99 ${fmt(row.firstToLast.p99, 2)}`);
      runs.push(row);
    }
  }
  clients.kill();
  await Promise.all([stop(daemon.child), stop(simA.child), stop(simB.child)]);
  const report = { date, bundle: DAEMON, node: process.version, nodeOptions: serviceNodeOptions().join(' '), inputHz: INPUT_HZ, scanHz: SCAN_HZ, samples: SAMPLES, warmup: WARMUP, loadBefore, loadAfter: loadavg()[0], runs };
  writeFileSync(join(RESULTS, `${OUT}.json`), JSON.stringify(report, null, 2) + '\n');
  writeFileSync(join(RESULTS, `${OUT}.md`), markdown(report));
  process.stdout.write(markdown(report));
}

function markdown(r) {
  const cell = (s) => `${fmt(s.p50, 2)} / ${fmt(s.p99, 2)}`;
  const rows = r.runs.map((row) =>
    `| ${row.run} | ${row.clients} | ${fmt(row.load, 2)} | ${cell(row.all)} | ${fmt(row.all.max, 1)} | ${cell(row.last)} | ${cell(row.readWait)} | ${cell(row.readToFirst)} | ${cell(row.firstToLast)} |`,
  );
  return `# Input change → WebSocket clients

${r.date} · \`${r.bundle}\` · Node ${r.node} \`${r.nodeOptions}\` · ${r.scanHz} Hz scans, ${r.inputHz ? `\`input_scan_frequency: ${r.inputHz}\`` : 'no input reads'} · ${r.samples} flips per row (after ${r.warmup} not counted) · load average ${fmt(r.loadBefore, 2)} before, ${fmt(r.loadAfter, 2)} after

From the simulator's register write to each client's message handler (CLOCK_MONOTONIC in both processes). Daemon, simulators, clients and this bench each in their own process. Times in ms, p50 / p99.

| run | clients | load average | change → client | max | change → last client | read wait | read → first client | first → last client |
| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
${rows.join('\n')}
`;
}

function summary(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return { p50: at(0.5), p99: at(0.99), max: sorted.at(-1), n: sorted.length };
}

/**
 * The clients: a message handler takes the time first, then looks for the
 * expected value with a byte search (no JSON parsing), so one client's
 * handling adds as little as it can to the next one's figure.
 */
function runClients() {
  let sockets = [];
  let marker;
  let arrivals = [];
  process.on('message', async (message) => {
    if (message.connect) {
      const { default: WebSocket } = await import('ws');
      sockets = await Promise.all(
        Array.from({ length: message.count }, async () => {
          const ws = new WebSocket(message.connect, { perMessageDeflate: false });
          ws.on('message', (data) => {
            const at = process.hrtime.bigint();
            if (marker === undefined || !data.includes(marker)) return;
            arrivals.push(at);
            if (arrivals.length === sockets.length) {
              marker = undefined;
              process.send({ arrivals: arrivals.map(String) });
              arrivals = [];
            }
          });
          await once(ws, 'open');
          return ws;
        }),
      );
      process.send('connected');
    } else if (message.expect) {
      marker = Buffer.from(message.expect);
      arrivals = [];
      process.send('armed');
    } else if (message.disconnect) {
      await Promise.all(sockets.map((ws) => (ws.close(), once(ws, 'close'))));
      sockets = [];
      process.send('disconnected');
    }
  });
}
