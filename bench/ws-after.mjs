// Does a WebSocket client that came and went slow the daemon down?
//
//   node bench/ws-after.mjs
//
// Starts two identical daemons (bench/config.yaml, the service's node
// options). One of them gets BENCH_WS_VISITS WebSocket clients, one after
// the other, that each take a few change pushes and leave; the other never
// sees one. Then GET /rest/do/1_01 is measured with wrk on both, in rounds
// that alternate which daemon goes first, so machine noise hits both alike.
// Reports each round and the medians; the ratio of medians is the effect.
// Environment: BENCH_DURATION (seconds per wrk run, default 5), BENCH_ROUNDS
// (default 6), BENCH_THREADS / BENCH_CONNECTIONS (default 2 / 16), BENCH_WS_VISITS (default 1).
import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import WebSocket from 'ws';
import {
  BENCH_DIR,
  ensureWrk,
  fmt,
  freePort,
  log,
  median,
  positive,
  runWrk,
  serviceNodeOptions,
  spawnDaemon,
  stop,
  waitForAnswer,
  tempDir,
} from './common.mjs';

const DURATION_S = positive('BENCH_DURATION', 5);
const ROUNDS = positive('BENCH_ROUNDS', 6);
const THREADS = positive('BENCH_THREADS', 2);
const CONNECTIONS = positive('BENCH_CONNECTIONS', 16);
const VISITS = positive('BENCH_WS_VISITS', 1);
const PATH = '/rest/do/1_01';

ensureWrk();
// bench/config.yaml with the WebSocket on, for both daemons.
const config = join(tempDir('iogate-ws-after-'), 'config.yaml');
writeFileSync(config, `apis:\n  websocket:\n    enabled: true\n${readFileSync(join(BENCH_DIR, 'config.yaml'), 'utf8')}`);
const start = async (label) => {
  const port = await freePort();
  const daemon = spawnDaemon(config, port);
  await waitForAnswer(port, PATH, daemon.child);
  return { label, port, child: daemon.child, runs: [] };
};
const fresh = await start('never had a WebSocket client');
const visited = await start(`had ${VISITS} WebSocket client(s) that left`);
process.on('exit', () => [fresh, visited].forEach(({ child }) => child.kill()));

// The same warm-up for both, so only the WebSocket visit differs.
for (const daemon of [fresh, visited]) await runWrk(`http://127.0.0.1:${daemon.port}${PATH}`, { seconds: 2, threads: THREADS, connections: CONNECTIONS });
for (let i = 0; i < VISITS; i++) {
  const ws = new WebSocket(`ws://127.0.0.1:${visited.port}/ws`);
  await once(ws, 'open');
  // The simulated inputs toggle, so pushes come by themselves; take a few.
  for (let pushes = 0; pushes < 3; pushes++) await once(ws, 'message');
  ws.close();
  await once(ws, 'close');
}
log(`WebSocket visit(s) done; ${ROUNDS} alternating rounds of ${DURATION_S} s`);

for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? [fresh, visited] : [visited, fresh];
  for (const daemon of order) {
    const result = await runWrk(`http://127.0.0.1:${daemon.port}${PATH}`, { seconds: DURATION_S, threads: THREADS, connections: CONNECTIONS });
    daemon.runs.push(result);
    log(`round ${round + 1}, ${daemon.label}: ${result.rps} req/s, p99 ${result.p99Ms} ms`);
  }
}
await Promise.all([stop(fresh.child), stop(visited.child)]);

const rps = (daemon) => median(daemon.runs.map((run) => run.rps));
const p99 = (daemon) => median(daemon.runs.map((run) => run.p99Ms));
console.log(`\nGET ${PATH}, wrk -t${THREADS} -c${CONNECTIONS} -d${DURATION_S}s, ${ROUNDS} alternating rounds, node ${serviceNodeOptions().join(' ')}\n`);
console.log('| daemon | req/s per round | median req/s | median p99 ms |');
console.log('| --- | --- | ---: | ---: |');
for (const daemon of [fresh, visited]) {
  console.log(`| ${daemon.label} | ${daemon.runs.map((run) => fmt(run.rps)).join(', ')} | ${fmt(rps(daemon))} | ${fmt(p99(daemon), 2)} |`);
}
console.log(`\nvisited / fresh, median req/s: ${fmt(rps(visited) / rps(fresh), 3)}`);
