// `npm run bench:fleet -- --nodes N` (default 100): a fleet of N bundled edge
// nodes, 3 Mosquitto brokers and one primary host on all three
// (test/fleet/), through the scenarios of test/fleet/scenarios.ts: cold
// start, broker loss, host offline and back, rolling restart and (as root)
// the network partition of one more node. Needs /usr/sbin/mosquitto; run
// after node build.mjs.
//
// Figures, ending with one JSON line:
//   birth_s            first daemon spawned → NBIRTH and DBIRTH of all N at the host
//   reborn_s           broker killed → every affected node's NBIRTH and DBIRTH on another broker
//   changes, lost      input edges the simulators logged over the broker-loss window, and those the host lacks
//                      (no DDATA of that value within 1.5 input periods); *late: of those lost, the ones that
//                      reached the host later (before the input's next edge to that value): a starved machine
//   rss_mb_per_node    mean VmRSS of a daemon (rss_anon_mb_per_node: its own part, RssAnon)
//   cpu_pct_per_node_idle, cpu_pct_per_node_storm
//                      mean share of one core per daemon: inputs stepping, no failure; then from the
//                      kill until every affected node replayed its buffer
//   host_msgs_per_s_idle, host_msgs_per_s_storm   Sparkplug messages the host received per second
//   host_reborn_s, host_outage_lost, host_outage_replayed
//                      the primary host offline for 6 s, then online: → every node born again; input
//                      edges of that window missing at the host, and those replayed as historical
//   restart_s, restart_node_mean_s, restart_node_max_s
//                      rolling restart (SIGTERM, start again, next once born) of all N: total, and per node
//                      from its SIGTERM to its DBIRTH at the host
//   restart_pairing_problems, restart_dead_after_back, restart_changes, restart_lost
//                      nodes whose births after it do not carry the next bdSeq or whose NDEATH pairs with
//                      no birth; nodes shown dead after they came back; input edges over the window and
//                      those the host never learnt (by DDATA, or by a DBIRTH for edges while a daemon was down)
//   partition_death_s, partition_noticed_s, partition_cut_s, partition_reborn_s
//                      one more node in its own network namespace, its veth cut: → its Will (NDEATH) at the
//                      host; → the node's own log says it lost the server; how long the link was down;
//                      link restored → NBIRTH and DBIRTH at the host (keep alive 2 s on that node)
//   partition_bdseq    bdSeq of the cut session → of the birth after it
//   partition_changes, partition_replayed, partition_lost
//                      input edges from the cut to the rebirth; edges of the whole window replayed as
//                      historical, and lost. Without root or `ip netns`: partition_skipped says why
//   baseline_*         the same daemon and board with apis.sparkplug off, run beside the fleet,
//                      so the per-node figures can be read as a ratio on a machine that may be shared
import { parseArgs } from 'node:util';
import { loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { cpuSeconds, log, memoryOf } from './common.mjs';
import { Fleet } from '../test/fleet/fleet.ts';
import { NetnsLink } from '../test/fleet/netns.ts';
import { brokerLoss, coldStart, hostOutage, partition, rollingRestart } from '../test/fleet/scenarios.ts';

const { values } = parseArgs({ options: { nodes: { type: 'string', default: '100' }, 'idle-s': { type: 'string', default: '15' } } });
const NODES = Number(values.nodes);
const IDLE_S = Number(values['idle-s']);
if (!Number.isInteger(NODES) || NODES < 3 || NODES > 240) throw new Error('--nodes takes 3…240');

const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;

/** CPU seconds of each pid now. */
const cpuOf = (pids) => pids.map((pid) => cpuSeconds(pid));
/** Mean share of one core per process between two cpuOf() readings `seconds` apart, %. */
const cpuPercent = (before, after, seconds) => (mean(after.map((cpu, i) => cpu - before[i])) / seconds) * 100;

const noNetns = NetnsLink.unavailable();
if (noNetns) log(`network partition skipped: ${noNetns}`);
const fleet = await Fleet.start({ nodes: NODES + 1, log, partition: noNetns === undefined });
try {
  // The last node runs without Sparkplug: the baseline.
  const baseline = fleet.nodes.pop();
  log(`load average ${loadavg().map((l) => l.toFixed(1)).join(' ')} on a machine that may be shared`);
  log(`cold start of ${NODES} nodes…`);
  const cold = await coldStart(fleet, 600_000);
  await fleet.startNode(baseline, { sparkplug: false });
  log(`all born in ${cold.birth_s} s; idle window of ${IDLE_S} s…`);
  await sleep(5000);
  const pids = fleet.daemonPids();
  const basePid = baseline.daemon.child.pid;
  const memory = pids.map((pid) => memoryOf(pid));
  const baseMemory = memoryOf(basePid);
  let t = Date.now();
  let cpu = cpuOf([...pids, basePid]);
  const idleFrom = t;
  await sleep(IDLE_S * 1000);
  let now = Date.now();
  let cpuNow = cpuOf([...pids, basePid]);
  const idle = cpuPercent(cpu.slice(0, -1), cpuNow.slice(0, -1), (now - t) / 1000);
  const baseIdle = cpuPercent(cpu.slice(-1), cpuNow.slice(-1), (now - t) / 1000);
  const idleMessages = fleet.host.count((m) => m.receivedAt >= idleFrom && m.receivedAt < now);
  const idleRate = idleMessages / ((now - idleFrom) / 1000);

  log('broker loss…');
  let storm = 0;
  const loss = await brokerLoss(fleet, {
    broker: 0,
    limitMs: 120_000,
    onStorm(phase) {
      if (phase === 'start') {
        t = Date.now();
        cpu = cpuOf(pids);
      } else {
        storm = cpuPercent(cpu, cpuOf(pids), (Date.now() - t) / 1000);
      }
    },
  });
  const stormSeconds = Math.max(0.001, (loss.storm.to - loss.storm.from) / 1000);
  const stormMessages = fleet.host.count((m) => m.receivedAt >= loss.storm.from && m.receivedAt <= loss.storm.to);
  log('host offline and back…');
  const outage = await hostOutage(fleet, { limitMs: 120_000 });
  log('rolling restart…');
  const rolling = await rollingRestart(fleet, { limitMs: 120_000 });
  let cut;
  if (!noNetns) {
    log('network partition of one node…');
    cut = await partition(fleet, { limitMs: 60_000 });
  }
  const round = (x, digits = 2) => Math.round(x * 10 ** digits) / 10 ** digits;
  const figures = {
    nodes: NODES,
    birth_s: round(cold.birth_s),
    started_s: round(cold.started_s),
    affected: loss.affected,
    reborn_s: round(loss.reborn_s),
    changes: loss.changes,
    lost: loss.lost,
    late: loss.late,
    replayed: loss.replayed,
    rss_mb_per_node: round(mean(memory.map((m) => m.rssMb)), 1),
    rss_anon_mb_per_node: round(mean(memory.map((m) => m.anonMb)), 1),
    cpu_pct_per_node_idle: round(idle),
    cpu_pct_per_node_storm: round(storm),
    host_msgs_per_s_idle: round(idleRate, 1),
    host_msgs_per_s_storm: round(stormMessages / stormSeconds, 1),
    storm_s: round(stormSeconds),
    host_reborn_s: round(outage.reborn_s),
    host_outage_changes: outage.changes,
    host_outage_lost: outage.lost,
    host_outage_late: outage.late,
    host_outage_replayed: outage.replayed,
    restart_s: round(rolling.restart_s),
    restart_node_mean_s: round(rolling.node_mean_s),
    restart_node_max_s: round(rolling.node_max_s),
    restart_pairing_problems: rolling.pairingProblems,
    restart_dead_after_back: rolling.deadAfterBack,
    restart_changes: rolling.changes,
    restart_lost: rolling.lost,
    restart_late: rolling.late,
    ...(cut
      ? {
          partition_death_s: round(cut.death_s),
          partition_noticed_s: round(cut.noticed_s),
          partition_cut_s: round(cut.cut_s),
          partition_reborn_s: round(cut.reborn_s),
          partition_bdseq: `${cut.diedBdSeq}→${cut.rebornBdSeq}`,
          partition_death_bdseq_matches: cut.deathBdSeq === cut.diedBdSeq,
          partition_changes: cut.windowChanges,
          partition_replayed: cut.replayed,
          partition_lost: cut.lost,
          partition_late: cut.late,
        }
      : { partition_skipped: noNetns }),
    baseline_rss_mb: round(baseMemory.rssMb, 1),
    baseline_rss_anon_mb: round(baseMemory.anonMb, 1),
    baseline_cpu_pct_idle: round(baseIdle),
    load_average: round(loadavg()[0], 1),
  };
  if (loss.lost > 0) log(`lost: ${loss.lostExamples.join('; ')}`);
  if (outage.lost > 0) log(`lost while the host was away: ${outage.lostExamples.join('; ')}`);
  if (rolling.problems.length > 0) log(`rolling restart: ${rolling.problems.slice(0, 10).join('; ')}`);
  if (rolling.lost > 0) {
    log(`lost over the rolling restart: ${rolling.lostExamples.join('; ')}`);
    // What those daemons said (a board that stopped answering in time shows here).
    for (const id of new Set(rolling.lostExamples.map((line) => line.split(' ')[0]))) {
      const said = fleet.nodes.find((node) => node.id === id)?.daemon?.output().split('\n').filter((line) => /^(WARNING|ERROR)/.test(line)) ?? [];
      log(`  ${id}: ${said.slice(-4).join(' | ') || 'no warning'}`);
    }
  }
  if (cut && cut.lost > 0) log(`lost over the partition: ${cut.lostExamples.join('; ')}`);
  console.log(JSON.stringify(figures));
} finally {
  await fleet.stop();
}
