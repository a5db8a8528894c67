// `npm run bench:automation-idle`: the idle CPU cost of 1,000 automations,
// as a ratio against the same daemon without any, in one run.
//
//   node bench/automation-idle.mjs [--seconds 20] [--rounds 3] [--max-ratio 1.10]   (after node build.mjs)
//
// Two built daemons (node options of deploy/iogate.service) run side by side,
// each polling its own `iogate-sim` (a brain board `00` and an E-8DI8RO `01`,
// inputs still) at 50 Hz over Modbus TCP on loopback: one with no
// automations, one with 1,000 of every kind (edges, presses, thresholds,
// counters, schedules, quality) that have nothing to do. CPU time (user +
// system, /proc/<pid>/stat) is sampled over the same windows for both;
// the figure is the ratio of the sums. Running them together puts both
// under the same load of the machine. Exits 1 when --max-ratio is given and
// exceeded.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { IDLE_AFTER_S, RESULTS, fmt, freePort, log, serviceNodeOptions, spawnDaemon, spawnSim, stop, tempDir, waitForAnswer } from './common.mjs';

const { values: args } = parseArgs({ options: { seconds: { type: 'string', default: '20' }, rounds: { type: 'string', default: '3' }, 'max-ratio': { type: 'string' }, count: { type: 'string', default: '1000' } } });
const SECONDS = Number(args.seconds);
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
for (let round = 0; round < ROUNDS; round++) {
  const before = [cpuTicks(none.daemon.child.pid), cpuTicks(many.daemon.child.pid)];
  await sleep(SECONDS * 1000);
  const after = [cpuTicks(none.daemon.child.pid), cpuTicks(many.daemon.child.pid)];
  const row = { round: round + 1, noneS: (after[0] - before[0]) / TICKS, manyS: (after[1] - before[1]) / TICKS };
  log(`round ${row.round}: CPU ${fmt(row.noneS, 2)} s without automations, ${fmt(row.manyS, 2)} s with ${COUNT} (${fmt(row.manyS / row.noneS, 3)}×)`);
  rounds.push(row);
}
const ratio = rounds.reduce((sum, row) => sum + row.manyS, 0) / rounds.reduce((sum, row) => sum + row.noneS, 0);
const report = { date: new Date().toISOString(), node: process.version, nodeOptions: serviceNodeOptions().join(' '), automations: COUNT, seconds: SECONDS, scanHz: SCAN_HZ, rounds, ratio };
const markdown = `# Idle CPU of ${COUNT} automations

${report.date} · Node ${report.node} \`${report.nodeOptions}\` · two boards at ${SCAN_HZ} Hz each, inputs still · ${ROUNDS} windows of ${SECONDS} s, both daemons at once

| window | CPU without automations (s) | CPU with ${COUNT} (s) | ratio |
| ---: | ---: | ---: | ---: |
${rounds.map((row) => `| ${row.round} | ${fmt(row.noneS, 2)} | ${fmt(row.manyS, 2)} | ${fmt(row.manyS / row.noneS, 3)} |`).join('\n')}

Ratio of the sums: **${fmt(ratio, 3)}**${MAX_RATIO === undefined ? '' : ` (bound ${MAX_RATIO})`}.
`;
writeFileSync(join(RESULTS, 'automation-idle.json'), JSON.stringify(report, null, 2) + '\n');
writeFileSync(join(RESULTS, 'automation-idle.md'), markdown);
process.stdout.write(markdown);
await Promise.all([stop(none.daemon.child), stop(many.daemon.child), stop(none.sim.child), stop(many.sim.child)]);
if (MAX_RATIO !== undefined && ratio > MAX_RATIO) {
  process.stderr.write(`ratio ${fmt(ratio, 3)} is above ${MAX_RATIO}\n`);
  process.exit(1);
}
