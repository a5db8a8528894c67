// What `input_scan_frequency` costs the daemon, in % of a core.
//
//   node bench/input-cost.mjs        (after node build.mjs)
//
// Two daemons run side by side on the same loopback Modbus TCP simulator
// (a Neuron brain board 00 and an E-16DI14DI board 0A, 50 Hz scans): one
// reads the brain board's input block at BENCH_INPUT_HZ (default 200) on top
// of the scan, the other does not. Their CPU time is read from /proc over
// the same BENCH_DURATION seconds (default 30), so other work on the machine
// weighs on both alike; the difference is the option's cost. The reads the
// simulator served say whether the planned rate was kept.
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { cpuSeconds, fmt, freePort, log, positive, spawnDaemon, spawnSim, stop, waitForAnswer } from './common.mjs';

const DURATION_S = positive('BENCH_DURATION', 30);
const INPUT_HZ = positive('BENCH_INPUT_HZ', 200);

const sim = await spawnSim([['00', 1], ['0A', 2]]);
const work = mkdtempSync(join(tmpdir(), 'iogate-input-cost-'));
const daemons = [];
process.on('exit', () => [sim.child, ...daemons.map((daemon) => daemon.child)].forEach((child) => child.kill()));
for (const inputHz of [0, INPUT_HZ]) {
  const config = join(work, `config-${inputHz}.yaml`);
  const fast = inputHz > 0 ? `, input_scan_frequency: ${inputHz}` : '';
  writeFileSync(
    config,
    `comm_channels:\n  TCP:\n    type: MODBUSTCP\n    port: ${sim.tcpPort}\n    devices:\n      1: {model: '00', slave-id: 1${fast}}\n      2: {model: '0A', slave-id: 2}\n`,
  );
  const port = await freePort();
  const { child } = spawnDaemon(config, port);
  await waitForAnswer(port, '/rest/di/1_01', child);
  daemons.push({ inputHz, child });
}
await sleep(2000);
const requests = async () => (await (await fetch(`${sim.controlUrl}/stats`)).json())['1'].requests;
const before = daemons.map((daemon) => cpuSeconds(daemon.child.pid));
const servedBefore = await requests();
const from = performance.now();
log(`measuring ${DURATION_S} s`);
await sleep(DURATION_S * 1000);
const seconds = (performance.now() - from) / 1000;
const used = daemons.map((daemon, i) => ((cpuSeconds(daemon.child.pid) - before[i]) / seconds) * 100);
const servedPerSecond = ((await requests()) - servedBefore) / seconds;
await Promise.all([stop(sim.child), ...daemons.map((daemon) => stop(daemon.child))]);

console.log(`\n${DURATION_S} s side by side, Modbus TCP on loopback, 50 Hz scans\n`);
console.log('| daemon | CPU, % of a core |');
console.log('| --- | ---: |');
console.log(`| scan only | ${fmt(used[0], 2)} |`);
console.log(`| + input_scan_frequency: ${INPUT_HZ} on the brain board | ${fmt(used[1], 2)} |`);
console.log(`\nCost: ${fmt(used[1] - used[0], 2)} % of a core for ${INPUT_HZ} extra reads/s (the brain board served ${fmt(servedPerSecond)} requests/s to both daemons together).`);
