// What `input_scan_frequency` costs the daemon, in % of a core.
//
//   node bench/input-cost.mjs        (after node build.mjs)
//
// Daemons run side by side, each on its own loopback Modbus TCP simulator (a
// Neuron brain board 00 and an E-16DI14DI board 0A, 50 Hz scans): one reads
// only by its scan, the others also read the brain board's input block at
// each rate of BENCH_INPUT_HZ (comma-separated, default 200,500,1000). Their
// CPU time (utime + stime from /proc/<pid>/stat) is read over the same
// BENCH_DURATION seconds (default 30), so other work on the machine weighs on
// all alike; the difference to the scan-only daemon is the option's cost. The
// reads each simulator served say whether the planned rate was kept.
// For scale, bench/bare-server.mjs polls one register of its own simulator at
// each rate too (a fixed-rate timer and one hand-made request at a time, no
// daemon around it): the least a Node process pays for those reads.
// CPU is given twice: utime + stime from /proc/<pid>/stat (clock ticks), and
// the scheduler's run time of all threads (/proc/<pid>/task/*/schedstat, ns).
// BENCH_REPEAT (default 2) repeats the measurement with the same processes.
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { cpuSeconds, fmt, freePort, log, positive, runSeconds, spawnBare, spawnDaemon, spawnSim, stop, waitForAnswer, tempDir } from './common.mjs';

const DURATION_S = positive('BENCH_DURATION', 30);
const RATES = (process.env.BENCH_INPUT_HZ ?? '200,500,1000').split(',').map(Number);
const REPEAT = positive('BENCH_REPEAT', 2);
if (RATES.some((hz) => !(hz > 0 && hz <= 1000))) throw new Error('BENCH_INPUT_HZ: rates between 1 and 1000 Hz, comma-separated');

const work = tempDir('iogate-input-cost-');
const processes = [];
process.on('exit', () => processes.forEach(({ child, sim }) => [child, sim.child].forEach((process) => process.kill())));
for (const inputHz of [0, ...RATES]) {
  const sim = await spawnSim([['00', 1], ['0A', 2]]);
  const config = join(work, `config-${inputHz}.yaml`);
  const fast = inputHz > 0 ? `, input_scan_frequency: ${inputHz}` : '';
  writeFileSync(
    config,
    `comm_channels:\n  TCP:\n    type: MODBUSTCP\n    port: ${sim.tcpPort}\n    devices:\n      1: {model: '00', slave-id: 1${fast}}\n      2: {model: '0A', slave-id: 2}\n`,
  );
  const port = await freePort();
  const { child } = spawnDaemon(config, port);
  processes.push({ label: inputHz ? `iogate + input_scan_frequency: ${inputHz} on the brain board` : 'iogate, scan only', base: 0, child, sim });
  await waitForAnswer(port, '/rest/di/1_01', child);
}
for (const inputHz of RATES) {
  const sim = await spawnSim([['00', 1]]);
  const replies = join(work, `bare-${inputHz}.json`);
  writeFileSync(replies, JSON.stringify({ events: { modbusPort: sim.tcpPort, unit: 1, register: 0, bit: 0, hz: inputHz, device: {} } }));
  const child = await spawnBare(await freePort(), replies);
  processes.push({ label: `bare poller, one register at ${inputHz} Hz`, base: undefined, child, sim });
}
// Past start-up and the first compilations.
await sleep(10_000);
const requests = async (sim) => (await (await fetch(`${sim.controlUrl}/stats`)).json())['1'].requests;
const runs = [];
for (let repeat = 0; repeat < REPEAT; repeat++) {
  const load = loadavg()[0];
  const before = processes.map(({ child }) => ({ stat: cpuSeconds(child.pid), run: runSeconds(child.pid) }));
  const servedBefore = await Promise.all(processes.map(({ sim }) => requests(sim)));
  const from = performance.now();
  log(`measuring ${DURATION_S} s (load average ${fmt(load, 2)})`);
  await sleep(DURATION_S * 1000);
  const seconds = (performance.now() - from) / 1000;
  const stat = processes.map(({ child }, i) => ((cpuSeconds(child.pid) - before[i].stat) / seconds) * 100);
  const run = processes.map(({ child }, i) => ((runSeconds(child.pid) - before[i].run) / seconds) * 100);
  const served = (await Promise.all(processes.map(({ sim }) => requests(sim)))).map((count, i) => (count - servedBefore[i]) / seconds);
  runs.push({ load, stat, run, served });
}
const loadAfter = loadavg()[0];
await Promise.all(processes.flatMap(({ child, sim }) => [stop(sim.child), stop(child)]));

const cells = (values, digits = 2) => values.map((value) => fmt(value, digits)).join(', ');
console.log(`\n${new Date().toISOString()}: ${DURATION_S} s side by side, ${REPEAT} run(s), Modbus TCP on loopback, 50 Hz scans; load average ${cells(runs.map((run) => run.load))}, ${fmt(loadAfter, 2)} after\n`);
console.log('| process | CPU (/proc stat), % of a core | cost | CPU (schedstat), % of a core | cost | requests/s its (brain) board served |');
console.log('| --- | ---: | ---: | ---: | ---: | ---: |');
processes.forEach(({ label, base }, i) => {
  const cost = (key) => (base === undefined || i === base ? '–' : cells(runs.map((run) => run[key][i] - run[key][base])));
  console.log(`| ${label} | ${cells(runs.map((run) => run.stat[i]))} | ${cost('stat')} | ${cells(runs.map((run) => run.run[i]))} | ${cost('run')} | ${cells(runs.map((run) => run.served[i]), 0)} |`);
});
