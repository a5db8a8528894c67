// `npm run bench:automation-latency`: input edge → the output's coil at the
// board, through an automation, with and without `input_scan_frequency`.
//
//   node bench/automation-latency.mjs        (after node build.mjs)
//
// The built daemon (node options of deploy/iogate.service) polls a brain
// board (`00`) on an `iogate-sim` Modbus TCP slave on loopback at 50 Hz scans,
// with an automation `when: {input: di/1_01}, then: {output: do/1_01, follow: true}`.
// This process asks the simulator to flip DI 1 a few ms later, from a timer
// of its own (a random phase against the scan grid), and waits until the
// simulator reports the master's write.
//
// What is measured: from the moment the simulator set the input (it stamps
// it; GET /changes `at`) to the moment it served the daemon's write of the
// output (`writtenAt`), both on CLOCK_MONOTONIC. Split: "read wait", change →
// the read that saw it; "read → write". The expectation (docs/automations.md):
// within one input scan period plus one bus transaction.
//
// Environment:
//   BENCH_INPUT_HZ   input_scan_frequency of the rows with fast inputs (default 500)
//   BENCH_SAMPLES    flips per row (default 300)
//   BENCH_WARMUP     flips before those, not counted (default 20)
//   BENCH_OUT        results file name in bench/results (default automation-latency)
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { BUNDLE, RESULTS, SIM_BUNDLE, fmt, freePort, log, positive, serviceNodeOptions, spawnDaemon, spawnSim, stop, tempDir, waitForAnswer } from './common.mjs';

const INPUT_HZ = positive('BENCH_INPUT_HZ', 500);
const SAMPLES = positive('BENCH_SAMPLES', 300);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 20);
const OUT = process.env.BENCH_OUT ?? 'automation-latency';
const SCAN_HZ = 50;
const FLIP_AFTER_MS = 5;

for (const file of [BUNDLE, SIM_BUNDLE]) if (!existsSync(file)) throw new Error(`${file} is missing; run \`node build.mjs\` first`);
const work = tempDir('iogate-automation-latency-');
const sim = await spawnSim([['00', 1]]);
const date = new Date().toISOString();
const rows = [];
for (const inputHz of [0, INPUT_HZ]) rows.push(await measure(inputHz));
await stop(sim.child);
const report = { date, node: process.version, nodeOptions: serviceNodeOptions().join(' '), scanHz: SCAN_HZ, samples: SAMPLES, warmup: WARMUP, rows };
writeFileSync(join(RESULTS, `${OUT}.json`), JSON.stringify(report, null, 2) + '\n');
writeFileSync(join(RESULTS, `${OUT}.md`), markdown(report));
process.stdout.write(markdown(report));

async function measure(inputHz) {
  const config = join(work, `config-${inputHz}.yaml`);
  writeFileSync(
    config,
    `alias_file: ${join(work, 'alias.yaml')}
comm_channels:
  TCP:
    type: MODBUSTCP
    port: ${sim.tcpPort}
    devices:
      1: {model: '00', slave-id: 1, scan_frequency: ${SCAN_HZ}${inputHz > 0 ? `, input_scan_frequency: ${inputHz}` : ''}}
automations:
  follow:
    when: {input: di/1_01}
    then: {output: do/1_01, follow: true}
`,
  );
  const port = await freePort();
  const daemon = spawnDaemon(config, port, { cwd: work });
  await waitForAnswer(port, '/rest/automation/follow', daemon.child);
  await sleep(1000);
  const control = sim.controlUrl;
  const flip = async (value, delayMs) => {
    const response = await fetch(`${control}/registers`, { method: 'POST', body: JSON.stringify({ unit: 1, space: 'holding', address: 0, values: [value], delayMs }) });
    if (!response.ok) throw new Error(`simulator control: ${response.status} ${await response.text()}`);
  };
  const changes = async () => (await fetch(`${control}/changes?unit=1`)).json();
  const ms = (from, to) => Number(BigInt(to) - BigInt(from)) / 1e6;
  const total = [];
  const readWait = [];
  const readToWrite = [];
  let value = 0;
  for (let i = -WARMUP; i < SAMPLES; i++) {
    value ^= 1;
    const before = (await changes()).writtenAt;
    await flip(value, FLIP_AFTER_MS + Math.floor(Math.random() * (1000 / SCAN_HZ)));
    let seen;
    const deadline = Date.now() + 2000;
    for (;;) {
      seen = await changes();
      if (seen.writtenAt !== before && seen.at !== null && seen.writtenAt !== null && BigInt(seen.writtenAt) > BigInt(seen.at)) break;
      if (Date.now() > deadline) throw new Error(`no output write within 2 s of flip ${i}`);
      await sleep(1);
    }
    if (i < 0) continue;
    total.push(ms(seen.at, seen.writtenAt));
    if (seen.readAt !== null) {
      readWait.push(ms(seen.at, seen.readAt));
      readToWrite.push(ms(seen.readAt, seen.writtenAt));
    }
  }
  await stop(daemon.child);
  const row = { inputHz, total: summary(total), readWait: summary(readWait), readToWrite: summary(readToWrite), boundMs: 1000 / (inputHz || SCAN_HZ) };
  log(`input_scan_frequency ${inputHz || 'off'}: p50 ${fmt(row.total.p50, 2)} / p99 ${fmt(row.total.p99, 2)} ms (read wait p99 ${fmt(row.readWait.p99, 2)}, read → write p99 ${fmt(row.readToWrite.p99, 2)})`);
  return row;
}

function summary(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return { p50: at(0.5), p99: at(0.99), max: sorted.at(-1), n: sorted.length };
}

function markdown(r) {
  const cell = (s) => `${fmt(s.p50, 2)} / ${fmt(s.p99, 2)}`;
  const lines = r.rows.map((row) => `| ${row.inputHz ? `${row.inputHz} Hz` : 'off'} | ${fmt(row.boundMs, 1)} | ${cell(row.total)} | ${fmt(row.total.max, 1)} | ${cell(row.readWait)} | ${cell(row.readToWrite)} |`);
  return `# Input edge → output coil, through an automation

${r.date} · Node ${r.node} \`${r.nodeOptions}\` · ${r.scanHz} Hz scans · ${r.samples} flips per row (after ${r.warmup} not counted)

From the simulator's input change to its serving of the daemon's output write (CLOCK_MONOTONIC in both). Times in ms, p50 / p99. "Input period" is the read period of the input: the scan's without \`input_scan_frequency\`.

| input_scan_frequency | input period | edge → coil | max | read wait | read → write |
| ---: | ---: | ---: | ---: | ---: | ---: |
${lines.join('\n')}
`;
}
