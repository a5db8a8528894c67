// `npm run bench:automation-idle`: the idle CPU cost of 1,000 automations,
// as a ratio against the same daemon without any, in one run.
//
//   node bench/automation-idle.mjs [--mode alternate|paired] [--seconds 20] [--rounds 9] [--settle 3] [--count 1000] [--max-ratio 1.10]   (after node build.mjs)
//
// Two built daemons (node options of deploy/iogate.service) run side by side,
// each polling its own `iogate-sim` (a brain board `00` and an E-8DI8RO `01`,
// inputs still) at 50 Hz over Modbus TCP on loopback: A with no
// automations, B with 1,000 of every kind (edges, presses, thresholds,
// counters, schedules, quality) that have nothing to do.
//
// Two ways to measure, `--mode`:
// - `alternate` (the default): the pairs take turns, A,B then B,A, round by
//   round. While one pair runs its window, the other (daemon and simulator)
//   is held with SIGSTOP, so neither competes with the other for the cores
//   and both see the machine alike on average; each resumed pair settles
//   `--settle` seconds before its window. A round's ratio is B/A of its two
//   adjacent windows.
// - `paired`: both pairs run through every window and are read at its start
//   and end (the one read first alternating), so a change in the machine's
//   load falls on both alike, but they compete for the two cores.
// CPU time is user + system from /proc/<pid>/stat, in clock ticks. The
// figure is the median of the rounds' ratios, with their spread (lowest,
// highest, interquartile range) and the ratio of the sums. `--count 0` runs
// two daemons without automations: the noise floor of the method on this
// machine. Exits 1 when --max-ratio is given and the median exceeds it.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { IDLE_AFTER_S, RESULTS, fmt, freePort, log, serviceNodeOptions, spawnDaemon, spawnSim, stop, tempDir, waitForAnswer } from './common.mjs';

const { values: args } = parseArgs({ options: { mode: { type: 'string', default: 'alternate' }, settle: { type: 'string', default: '3' }, seconds: { type: 'string', default: '20' }, rounds: { type: 'string', default: '9' }, 'max-ratio': { type: 'string' }, count: { type: 'string', default: '1000' } } });
const SECONDS = Number(args.seconds);
const MODE = args.mode === 'paired' ? 'paired' : 'alternate';
const SETTLE_S = Number(args.settle);
const ROUNDS = Math.max(1, Math.round(Number(args.rounds)));
const COUNT = Math.round(Number(args.count));
const MAX_RATIO = args['max-ratio'] === undefined ? undefined : Number(args['max-ratio']);
const SCAN_HZ = 50;
const TICKS = 100; // USER_HZ of /proc/<pid>/stat on Linux

const work = tempDir('iogate-automation-idle-');

/** 1,000 automations of every kind that stay idle with still inputs. */
function automations(count) {
  const lines = ['automations:'];
  const dis = ['di/1_01', 'di/1_02', 'di/1_03', 'di/1_04', ...Array.from({ length: 8 }, (_, i) => `di/2_0${i + 1}`)];
  const outputs = ['led/1_01', 'led/1_02', 'led/1_03', 'led/1_04', ...Array.from({ length: 8 }, (_, i) => `ro/2_0${i + 1}`)];
  for (let i = 0; i < count; i++) {
    const input = dis[i % dis.length];
    const output = outputs[i % outputs.length];
    const when = [
      `{input: ${input}, edge: rising}`,
      `{input: ${input}, press: short}`,
      `{input: ai/1_01, above: ${5 + (i % 5)}, hysteresis: 0.5, for_s: 10}`,
      `{input: ${input}, counter_rises_by: 50, within_s: 600}`,
      `{at: "${String(i % 24).padStart(2, '0')}:${String(i % 60).padStart(2, '0')}", weekdays: [sun]}`,
      `{input: modbus_slave/${1 + (i % 2)}, quality: offline}`,
    ][i % 6];
    lines.push(`  a${i}:`, `    when: ${when}`, `    then: {output: ${output}, set: on}`);
  }
  return lines.join('\n') + '\n';
}

async function daemonWith(name, extra) {
  const sim = await spawnSim([['00', 1], ['01', 2]]);
  const config = join(work, `${name}.yaml`);
  writeFileSync(
    config,
    `alias_file: ${join(work, `${name}-alias.yaml`)}
comm_channels:
  TCP:
    type: MODBUSTCP
    port: ${sim.tcpPort}
    devices:
      1: {model: '00', slave-id: 1, scan_frequency: ${SCAN_HZ}}
      2: {model: '01', slave-id: 2, scan_frequency: ${SCAN_HZ}}
${extra}`,
  );
  const port = await freePort();
  const daemon = spawnDaemon(config, port, { cwd: work });
  await waitForAnswer(port, '/rest/all', daemon.child);
  return { name, sim, daemon, port };
}

function cpuTicks(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

const none = await daemonWith('none', '');
const many = await daemonWith('many', automations(COUNT));
const listed = ((await (await fetch(`http://127.0.0.1:${many.port}/rest/all`)).json())).filter((device) => device.dev === 'automation');
if (listed.length !== COUNT) throw new Error(`expected ${COUNT} automations, the daemon lists ${listed.length}`);
// Start-up work (compiling, the first collections) is over before the first window.
await sleep(IDLE_AFTER_S * 1000);
const rounds = [];
const pids = [none.daemon.child.pid, many.daemon.child.pid];
const pairs = [none, many];
/** Holds (SIGSTOP) or resumes (SIGCONT) a daemon and its simulator together. */
function hold(pair, held) {
  const signal = held ? 'SIGSTOP' : 'SIGCONT';
  // The simulator first on resume, the daemon first on hold: the daemon never polls a held simulator.
  const order = held ? [pair.daemon.child.pid, pair.sim.child.pid] : [pair.sim.child.pid, pair.daemon.child.pid];
  for (const pid of order) process.kill(pid, signal);
}
// A held process would not act on the SIGTERM of the clean-up: whatever ends this script resumes them first.
process.on('exit', () => {
  for (const child of pairs.flatMap((pair) => [pair.sim.child, pair.daemon.child])) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGCONT');
  }
});
/** CPU seconds of pair `index` over one window of its own, the other held. */
async function alone(index) {
  hold(pairs[1 - index], true);
  hold(pairs[index], false);
  await sleep(SETTLE_S * 1000);
  const before = cpuTicks(pids[index]);
  await sleep(SECONDS * 1000);
  return (cpuTicks(pids[index]) - before) / TICKS;
}
/** Both daemons' ticks, the one read first alternating by round. */
const readBoth = (round) => (round % 2 === 0 ? [cpuTicks(pids[0]), cpuTicks(pids[1])] : [cpuTicks(pids[1]), cpuTicks(pids[0])].reverse());
for (let round = 0; round < ROUNDS; round++) {
  let noneS;
  let manyS;
  if (MODE === 'alternate') {
    if (round % 2 === 0) [noneS, manyS] = [await alone(0), await alone(1)];
    else [manyS, noneS] = [await alone(1), await alone(0)];
  } else {
    const before = readBoth(round);
    await sleep(SECONDS * 1000);
    const after = readBoth(round);
    [noneS, manyS] = [(after[0] - before[0]) / TICKS, (after[1] - before[1]) / TICKS];
  }
  const row = { round: round + 1, noneS, manyS, ratio: manyS / noneS };
  log(`round ${row.round}: CPU ${fmt(row.noneS, 2)} s without automations, ${fmt(row.manyS, 2)} s with ${COUNT} (${fmt(row.ratio, 3)}×)`);
  rounds.push(row);
}
for (const pair of pairs) hold(pair, false);
/** The q-quantile of sorted values, interpolated. */
function quantile(sorted, q) {
  const at = (sorted.length - 1) * q;
  const low = Math.floor(at);
  return sorted[low] + (sorted[Math.min(low + 1, sorted.length - 1)] - sorted[low]) * (at - low);
}
const ratios = rounds.map((row) => row.ratio).sort((a, b) => a - b);
const median = quantile(ratios, 0.5);
const spread = { lowest: ratios[0], q1: quantile(ratios, 0.25), q3: quantile(ratios, 0.75), highest: ratios.at(-1) };
const ratio = rounds.reduce((sum, row) => sum + row.manyS, 0) / rounds.reduce((sum, row) => sum + row.noneS, 0);
const report = { date: new Date().toISOString(), mode: MODE, node: process.version, nodeOptions: serviceNodeOptions().join(' '), automations: COUNT, seconds: SECONDS, scanHz: SCAN_HZ, rounds, median, spread, ratio };
const markdown = `# Idle CPU of ${COUNT} automations

${report.date} · Node ${report.node} \`${report.nodeOptions}\` · two boards at ${SCAN_HZ} Hz each, inputs still · ${ROUNDS} rounds of ${SECONDS} s windows, ${MODE === 'alternate' ? 'the two daemons in turn (A,B then B,A), the other held with SIGSTOP' : 'both daemons in each window'}

| round | CPU without automations (s) | CPU with ${COUNT} (s) | ratio |
| ---: | ---: | ---: | ---: |
${rounds.map((row) => `| ${row.round} | ${fmt(row.noneS, 2)} | ${fmt(row.manyS, 2)} | ${fmt(row.ratio, 3)} |`).join('\n')}

Median ratio **${fmt(median, 3)}**${MAX_RATIO === undefined ? '' : ` (bound ${MAX_RATIO})`}; spread ${fmt(spread.lowest, 3)}–${fmt(spread.highest, 3)}, interquartile ${fmt(spread.q1, 3)}–${fmt(spread.q3, 3)}; ratio of the sums ${fmt(ratio, 3)}.
`;
writeFileSync(join(RESULTS, 'automation-idle.json'), JSON.stringify(report, null, 2) + '\n');
writeFileSync(join(RESULTS, 'automation-idle.md'), markdown);
process.stdout.write(markdown);
await Promise.all([stop(none.daemon.child), stop(many.daemon.child), stop(none.sim.child), stop(many.sim.child)]);
if (MAX_RATIO !== undefined && median > MAX_RATIO) {
  process.stderr.write(`median ratio ${fmt(median, 3)} is above ${MAX_RATIO}\n`);
  process.exit(1);
}
