import type { HostMessage } from '../helpers/sparkplug-host.js';
import type { Fleet, FleetNode } from './fleet.js';

// The fleet scenarios, shared by the CI test (test/interop/sparkplug-fleet.test.ts)
// and the bench (bench/fleet.mjs). Each returns its figures; the caller
// asserts or prints them.

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const isNodeBirth = (m: HostMessage) => m.type === 'NBIRTH';
const isDeviceBirth = (m: HostMessage) => m.type === 'DBIRTH' && m.device === '1';

/** Cold start: every daemon started, until the host has NBIRTH and DBIRTH of all of them. */
export async function coldStart(fleet: Fleet, limitMs: number): Promise<{ birth_s: number; started_s: number }> {
  const t0 = Date.now();
  await fleet.startNodes();
  const started = Date.now();
  const ids = fleet.nodes.map((node) => node.id);
  await fleet.host.waitForNodes(ids, isNodeBirth, limitMs, 'NBIRTH');
  const last = await fleet.host.waitForNodes(ids, isDeviceBirth, limitMs, 'DBIRTH');
  return { birth_s: (last - t0) / 1000, started_s: (started - t0) / 1000 };
}

export interface BrokerLoss {
  affected: number;
  reborn_s: number;
  /** Input edges the simulators logged for all nodes in the window. */
  changes: number;
  /** Of those, edges the host never got (no DDATA of that input with that value, stamped just after). */
  lost: number;
  /** Of the lost, those that reached the host later than the lookup allows. */
  late: number;
  lostExamples: string[];
  /** Edges that reached the host as historical (replayed) DDATA. */
  replayed: number;
  window_s: number;
  storm: { from: number; to: number };
}

/**
 * Kills the broker that is the first choice of a third of the nodes while
 * the inputs step; waits until every affected node has a new NBIRTH and
 * DBIRTH on another broker and has replayed its buffer, then compares every
 * input edge the simulators logged in the window with the host's history.
 */
export async function brokerLoss(
  fleet: Fleet,
  {
    broker = 0,
    beforeMs = 5000,
    afterMs = 5000,
    limitMs = 60_000,
    seenWithinMs,
    onStorm,
  }: {
    broker?: number;
    beforeMs?: number;
    afterMs?: number;
    limitMs?: number;
    seenWithinMs?: number;
    /** Called as the broker is killed and again once every affected node has replayed. */
    onStorm?: (phase: 'start' | 'end') => void;
  } = {},
): Promise<BrokerLoss> {
  const seenWithin = seenWithinMs ?? Math.round(fleet.options.toggleMs * 1.5);
  const affected = fleet.nodesOf(broker);
  const from = Date.now();
  await sleep(beforeMs);
  // Kill just before the next input step of the first simulator, so the outage holds edges to replay.
  const steps = (await fleet.edges(affected[0]!, from)).map((edge) => edge.at);
  if (steps.length > 0) {
    let wait = Math.max(...steps) + fleet.options.toggleMs - Date.now();
    while (wait < 150) wait += fleet.options.toggleMs;
    await sleep(wait - 150);
  }
  const killedAt = Date.now();
  onStorm?.('start');
  await fleet.killBroker(broker);
  const ids = affected.map((node) => node.id);
  // A birth after the kill can only come through a surviving broker: the dead one's host connection hears nothing more.
  const surviving = (m: HostMessage) => m.receivedAt > killedAt && m.type === 'NBIRTH';
  await fleet.host.waitForNodes(ids, surviving, limitMs, 'NBIRTH after the broker loss');
  const last = await fleet.host.waitForNodes(ids, (m) => m.receivedAt > killedAt && isDeviceBirth(m), limitMs, 'DBIRTH after the broker loss');
  await untilDrained(affected, limitMs);
  const stormEnd = Date.now();
  onStorm?.('end');
  await sleep(afterMs);
  // Edges up to now minus the time an edge may take to reach the host.
  const to = Date.now() - seenWithin;
  const check = await compare(fleet, fleet.nodes, from, to, seenWithin);
  return { affected: affected.length, reborn_s: (last - killedAt) / 1000, window_s: (to - from) / 1000, storm: { from: killedAt, to: stormEnd }, ...check };
}

/** Waits until the affected nodes' store-and-forward buffers are empty (read from their /metrics). */
async function untilDrained(nodes: readonly FleetNode[], limitMs: number): Promise<void> {
  const deadline = Date.now() + limitMs;
  for (const node of nodes) {
    for (;;) {
      const text = await (await fetch(`${node.daemon!.baseUrl}/metrics`)).text();
      const line = text.split('\n').find((row) => row.startsWith('iogate_sparkplug_buffer_changes'));
      if (line !== undefined && Number(line.slice(line.lastIndexOf(' ') + 1)) === 0) break;
      if (Date.now() > deadline) throw new Error(`${node.id}: store-and-forward buffer not drained within ${limitMs} ms`);
      await sleep(100);
    }
  }
}

/**
 * Every digital input edge a simulator logged for a node's unit between
 * `from` and `to` must be in the host's history of that input: a DDATA
 * metric (live or historical; with `births`, also a DBIRTH) with the same
 * value, stamped within `seenWithin` ms after the edge. An edge without one
 * is lost; `late` counts those of them that did reach the host, only later
 * (a sample with that value before the input's next edge to the same value:
 * a starved machine, not a missing change).
 */
export async function compare(
  fleet: Fleet,
  nodes: readonly FleetNode[],
  from: number,
  to: number,
  seenWithin: number,
  { births = false }: { /** A DBIRTH's value counts too (edges made while the daemon was down). */ births?: boolean } = {},
): Promise<{ changes: number; lost: number; late: number; replayed: number; lostExamples: string[] }> {
  let changes = 0;
  let lost = 0;
  let late = 0;
  let replayed = 0;
  const lostExamples: string[] = [];
  for (const node of nodes) {
    const logged = (await fleet.edges(node, from)).filter((edge) => edge.address === 0);
    const edges = logged.filter((edge) => edge.at <= to);
    changes += edges.length;
    for (let bit = 0; bit < 4; bit++) {
      const name = `di/1_0${bit + 1}/value`;
      const history = fleet.host.history(node.id, '1', name).filter((sample) => sample.type === 'DDATA' || (births && sample.type === 'DBIRTH'));
      for (const edge of edges.filter((e) => e.bit === bit)) {
        const match = history.find((sample) => sample.value === edge.on && sample.timestamp >= edge.at && sample.timestamp <= edge.at + seenWithin);
        if (!match) {
          lost++;
          const next = logged.find((e) => e.bit === bit && e.on === edge.on && e.at > edge.at)?.at ?? Infinity;
          if (history.some((sample) => sample.value === edge.on && sample.timestamp > edge.at + seenWithin && sample.timestamp < next)) late++;
          if (lostExamples.length < 10) lostExamples.push(`${node.id} ${name} → ${edge.on} at ${new Date(edge.at).toISOString()}`);
        } else if (match.historical) replayed++;
      }
    }
  }
  return { changes, lost, late, replayed, lostExamples };
}

export interface HostOutage {
  /** Host back online → every node's NBIRTH and DBIRTH. */
  reborn_s: number;
  /** DATA messages the host received while it was offline (after every node's NDEATH): should be none. */
  whileOffline: number;
  /** NDEATHs the host received while it was offline: one per node. */
  deaths: number;
  changes: number;
  lost: number;
  /** Of the lost, those that reached the host later than the lookup allows. */
  late: number;
  lostExamples: string[];
  replayed: number;
}

/**
 * The primary host publishes STATE offline on every broker it reaches: every
 * node sends its NDEATH and goes quiet, buffering its changes; after
 * `quietMs` the host is online again, every node births and replays. Every
 * input edge of the window must reach the host, those of the quiet time as
 * historical DDATA.
 */
export async function hostOutage(fleet: Fleet, { quietMs = 6000, afterMs = 4000, limitMs = 60_000 } = {}): Promise<HostOutage> {
  const seenWithin = Math.round(fleet.options.toggleMs * 1.5);
  const nodes = fleet.nodes.filter((node) => node.daemon !== undefined);
  const ids = nodes.map((node) => node.id);
  const from = Date.now();
  // Taken before the publish: a node may answer before the broker's PUBACK reaches the host.
  const offAt = Date.now();
  await fleet.host.publishState(false);
  const lastDeath = await fleet.host.waitForNodes(ids, (m) => m.receivedAt >= offAt && m.type === 'NDEATH', limitMs, 'NDEATH after the host went offline');
  await sleep(quietMs);
  const onAt = Date.now();
  const whileOffline = fleet.host.count((m) => m.receivedAt > lastDeath && m.receivedAt < onAt && m.type.endsWith('DATA'));
  const deaths = fleet.host.count((m) => m.receivedAt >= offAt && m.receivedAt < onAt && m.type === 'NDEATH');
  await fleet.host.publishState(true);
  const last = await fleet.host.waitForNodes(ids, (m) => m.receivedAt > onAt && isDeviceBirth(m), limitMs, 'DBIRTH after the host came back');
  await untilDrained(nodes, limitMs);
  await sleep(afterMs);
  const to = Date.now() - seenWithin;
  const check = await compare(fleet, nodes, from, to, seenWithin);
  return { reborn_s: (last - onAt) / 1000, whileOffline, deaths, ...check };
}

export interface RollingRestart {
  /** First stop → last node born again. */
  restart_s: number;
  /** Per node, SIGTERM → its DBIRTH at the host: mean and max. */
  node_mean_s: number;
  node_max_s: number;
  /** Nodes shown dead at the host after they came back (a late Will), and other bdSeq pairing defects. */
  deadAfterBack: number;
  pairingProblems: number;
  problems: string[];
  /** Input edges over the window, and those the host did not learn in time (neither by DDATA nor by the value in a DBIRTH); `late`: of those, learnt later. */
  changes: number;
  lost: number;
  late: number;
  lostExamples: string[];
}

/**
 * Every daemon in turn stopped (SIGTERM) and started again on the same state
 * folder, the next one once this one is born again, while the inputs step.
 * Afterwards every node must be online at the host, each NDEATH paired with
 * a birth, and each node's births must carry a new bdSeq per session (the
 * previous + 1). An input edge made while a daemon was down reaches the host
 * as the value in its DBIRTH, so births count in the lookup.
 */
export async function rollingRestart(fleet: Fleet, { limitMs = 30_000, settleMs = 2000 } = {}): Promise<RollingRestart> {
  const seenWithin = Math.round(fleet.options.toggleMs * 1.5);
  const nodes = fleet.nodes.filter((node) => node.daemon !== undefined);
  const t0 = Date.now();
  const perNode: number[] = [];
  for (const node of nodes) {
    const at = Date.now();
    await fleet.stopNode(node, 'SIGTERM');
    await fleet.startNode(node);
    const born = await fleet.host.waitForNodes([node.id], (m) => m.receivedAt > at && isDeviceBirth(m), limitMs, `${node.id} born again after its restart`);
    perNode.push((born - at) / 1000);
  }
  const restart_s = (Date.now() - t0) / 1000;
  // Late Wills or deaths would show up now.
  await sleep(Math.max(settleMs, seenWithin));
  const problems: string[] = [];
  let deadAfterBack = 0;
  let pairingProblems = 0;
  for (const node of nodes) {
    if (!fleet.host.nodeState(node.id).online) {
      deadAfterBack++;
      problems.push(`${node.id} shown dead after it came back`);
    }
    const unpaired = fleet.host.unpairedDeaths(node.id);
    if (unpaired.length > 0) {
      pairingProblems++;
      problems.push(`${node.id}: NDEATH with bdSeq ${unpaired.join(', ')} pairs with no birth`);
    }
    const births = fleet.host.messages(node.id).filter((m) => m.type === 'NBIRTH' && m.receivedAt >= t0);
    const before = fleet.host.messages(node.id).filter((m) => m.type === 'NBIRTH' && m.receivedAt < t0).at(-1);
    const seqOf = (m: HostMessage | undefined) => m?.metrics.find((metric) => metric.name === 'bdSeq')?.value as number | undefined;
    if (births.length !== 1 || seqOf(births[0]) !== ((seqOf(before) ?? -1) + 1) % 256) {
      pairingProblems++;
      problems.push(`${node.id}: births after the restart with bdSeq ${births.map(seqOf).join(', ')}, before ${seqOf(before)}`);
    }
  }
  const check = await compare(fleet, nodes, t0, Date.now() - seenWithin, seenWithin, { births: true });
  const mean = perNode.reduce((a, b) => a + b, 0) / Math.max(1, perNode.length);
  return { restart_s, node_mean_s: mean, node_max_s: Math.max(0, ...perNode), deadAfterBack, pairingProblems, problems, changes: check.changes, lost: check.lost, late: check.late, lostExamples: check.lostExamples };
}

export interface Partition {
  /** bdSeq of the session that was cut, and of the NDEATH the host got for it (its Will). */
  diedBdSeq: number | undefined;
  deathBdSeq: number | undefined;
  /** bdSeq of the NBIRTH after the link came back; each CONNECT tried during the cut takes a number. */
  rebornBdSeq: number | undefined;
  /** Link cut → that NDEATH at the host (the broker's keep alive ran out). */
  death_s: number;
  /** Link cut → the node's own log says it lost the server (its keep alive ran out). */
  noticed_s: number;
  /** How long the link was down. */
  cut_s: number;
  /** Link restored → NBIRTH and DBIRTH at the host. */
  reborn_s: number;
  /** Input edges the simulator logged from the cut until the rebirth, and over the whole window. */
  windowChanges: number;
  changes: number;
  lost: number;
  /** Of the lost, those that reached the host later than the lookup allows. */
  late: number;
  lostExamples: string[];
  replayed: number;
  /** The node is shown online at the host at the end, and every NDEATH pairs with a birth. */
  online: boolean;
  unpaired: number[];
}

/**
 * The partitioned node (Fleet `partition`) is born, its inputs step, then
 * its link is cut: no packet passes and neither side is told. Both sides
 * must notice through their keep alive: the broker publishes the node's Will
 * (NDEATH with the bdSeq of the cut session) and the node goes quiet,
 * buffering its changes, and walks its server list. Once both have happened
 * the link is restored; the node must be born again (NBIRTH, DBIRTH) and
 * replay, and every input edge of the window must reach the host.
 */
export async function partition(fleet: Fleet, { beforeMs = 3000, afterMs = 3000, limitMs = 30_000 } = {}): Promise<Partition> {
  const node = fleet.partitioned;
  const link = fleet.link;
  if (!node || !link) throw new Error('the fleet was started without `partition`');
  const seenWithin = Math.round(fleet.options.toggleMs * 1.5);
  const id = node.id;
  if (!node.daemon) {
    const at = Date.now();
    await fleet.startNode(node);
    await fleet.host.waitForNodes([id], (m) => m.receivedAt > at && isDeviceBirth(m), limitMs, `${id} born`);
  }
  const from = Date.now();
  await sleep(beforeMs);
  const diedBdSeq = fleet.host.nodeState(id).bdSeq;
  const losses = () => (node.daemon!.output().match(/Sparkplug: lost /g) ?? []).length;
  const lossesBefore = losses();
  const cutAt = Date.now();
  link.cut();
  let restoreAt: number;
  let noticedAt: number;
  try {
    // Watched from the cut on, beside the wait for the Will: either side may notice first.
    const deadline = cutAt + limitMs;
    const noticed = (async () => {
      while (losses() === lossesBefore && Date.now() < deadline) await sleep(20);
      return Date.now();
    })();
    const deathAt = await fleet.host.waitForNodes([id], (m) => m.receivedAt > cutAt && m.type === 'NDEATH', limitMs, `${id}'s Will after the cut`);
    noticedAt = await noticed;
    if (losses() === lossesBefore) throw new Error(`${id} did not notice the cut within ${limitMs} ms`);
    restoreAt = Date.now();
    link.restore();
    const death = fleet.host.messages(id).find((m) => m.receivedAt > cutAt && m.type === 'NDEATH')!;
    const rebornAt = await fleet.host.waitForNodes([id], (m) => m.receivedAt > restoreAt && isDeviceBirth(m), limitMs, `${id} born again after the link came back`);
    const birth = fleet.host.messages(id).find((m) => m.receivedAt > restoreAt && m.type === 'NBIRTH');
    await untilDrained([node], limitMs);
    await sleep(afterMs);
    const to = Date.now() - seenWithin;
    const check = await compare(fleet, [node], from, to, seenWithin);
    const windowChanges = (await fleet.edges(node, cutAt)).filter((edge) => edge.address === 0 && edge.at <= rebornAt).length;
    const bdSeqOf = (m: HostMessage | undefined) => m?.metrics.find((metric) => metric.name === 'bdSeq')?.value as number | undefined;
    return {
      diedBdSeq,
      deathBdSeq: bdSeqOf(death),
      rebornBdSeq: bdSeqOf(birth),
      death_s: (deathAt - cutAt) / 1000,
      noticed_s: (noticedAt - cutAt) / 1000,
      cut_s: (restoreAt - cutAt) / 1000,
      reborn_s: (rebornAt - restoreAt) / 1000,
      windowChanges,
      ...check,
      online: fleet.host.nodeState(id).online,
      unpaired: fleet.host.unpairedDeaths(id),
    };
  } finally {
    // Never leave the link down, whatever failed.
    link.restore();
  }
}
