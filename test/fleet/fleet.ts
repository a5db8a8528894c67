import type { ChildProcess } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SIM_BUNDLE, startSim, type SimProcess } from '../helpers/sim-process.js';
import { spawnDaemon, type SpawnedDaemon } from '../helpers/spawn-daemon.js';
import { Mosquitto } from '../interop/peers/mosquitto.js';
import { FleetHost } from './fleet-host.js';
import { NetnsLink } from './netns.js';
import { tempDir } from '../helpers/temp-dir.js';

// A fleet of iogate edge nodes on one machine, for the fleet test and the
// fleet bench: 3 Mosquitto brokers on loopback, N bundled daemons (each its
// own edge_node_id, config and state folder in one temp dir, all three
// brokers in its server list, rotated so each broker is the first choice of
// a third of the nodes), simulator processes serving each node one
// simulated Neuron section (its own Modbus unit, whose inputs step and whose
// edges the simulator logs with their times), and one primary host on all
// three brokers.
//
// With `partition`, one more node (`node-cut`) and its own simulator run in
// a network namespace made for them (test/fleet/netns.ts), reaching the
// brokers only through a veth pair: each broker has one more listener, on
// the host-side veth address and nowhere else, and that node lists those
// addresses as its servers. Cutting the link partitions that node alone.
//
// Every process is started here and stopped here by its PID: stop() in a
// finally, an exit hook that SIGKILLs what is left, and SIGINT. Every wait is
// bounded.

export const GROUP = 'fleet';
export const HOST_ID = 'scada';
/** Simulated units per simulator process (Modbus unit ids are 1…247). */
const UNITS_PER_SIM = 50;
/** Daemons started at once (each costs a bundle load on a 2-core machine). */
const START_CONCURRENCY = 6;

export interface FleetOptions {
  nodes: number;
  /** Period of the simulators' input steps, ms: input 1 of every node toggles this often. */
  toggleMs?: number;
  /** scan_frequency of each node's board, Hz. */
  scanHz?: number;
  log?: (line: string) => void;
  /** Brokers started elsewhere (a clustered broker's nodes) instead of 3 Mosquittos; kill(b) stops one abruptly. */
  brokers?: FleetBroker[];
  /** One more node, `partitioned`, in a network namespace of its own (root only; see NetnsLink.unavailable()). */
  partition?: boolean;
}

/** MQTT keep alive of the partitioned node, s: its cut is seen by both sides within about 1.5 times this. */
export const PARTITION_KEEPALIVE_S = 2;

export interface FleetBroker {
  url: string;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

export interface FleetNode {
  id: string;
  index: number;
  /** Its brokers, by index into fleet.brokers, in its server order. */
  serverOrder: number[];
  sim: SimProcess;
  unit: number;
  dir: string;
  daemon?: SpawnedDaemon;
  /** Its server URLs, when not the brokers' loopback ones. */
  urls?: string[];
  /** Address its HTTP API listens on, when not loopback (inside its namespace). */
  address?: string;
  /** Command prefix that runs it in its namespace. */
  prefix?: string[];
  keepalive?: number;
}

/** Nodes' PIDs and brokers' PIDs still alive in this process, for the exit hook. */
const live = new Set<ChildProcess>();
let hooked = false;
function hookExit(): void {
  if (hooked) return;
  hooked = true;
  process.on('exit', () => {
    for (const child of live) if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) process.kill(child.pid, 'SIGKILL');
  });
  process.once('SIGINT', () => {
    for (const child of live) if (child.pid !== undefined && child.exitCode === null) process.kill(child.pid, 'SIGKILL');
    process.exit(130);
  });
}

export class Fleet {
  readonly dir = tempDir('iogate-fleet-');
  readonly brokers: FleetBroker[] = [];
  readonly sims: SimProcess[] = [];
  readonly nodes: FleetNode[] = [];
  host!: FleetHost;
  /** The partitioned node's namespace and link, with `partition`. */
  link?: NetnsLink;
  /** The node in its own namespace (not in `nodes`), with `partition`. */
  partitioned?: FleetNode;
  /** Every node whose daemon was started, including any taken out of `nodes` by the caller. */
  private readonly started = new Set<FleetNode>();
  private readonly log: (line: string) => void;

  private constructor(readonly options: Required<Omit<FleetOptions, 'log' | 'brokers' | 'partition'>> & FleetOptions) {
    this.log = options.log ?? (() => undefined);
  }

  /** Brokers, simulators and the host; the daemons are started by startNodes(). */
  static async start(options: FleetOptions): Promise<Fleet> {
    hookExit();
    const fleet = new Fleet({ toggleMs: 2000, scanHz: 4, ...options });
    try {
      fleet.brokers.push(...(options.brokers ?? []));
      if (options.partition && fleet.brokers.length > 0) throw new Error('the partition scenario needs the fleet\'s own Mosquittos');
      // Before the brokers: their extra listener binds the host-side veth address.
      if (options.partition) fleet.link = NetnsLink.create();
      const own: Mosquitto[] = [];
      for (let i = fleet.brokers.length; i < 3; i++) {
        const broker = await Mosquitto.start({ alsoOn: fleet.link ? [fleet.link.hostAddress] : [] });
        own.push(broker);
        fleet.brokers.push(broker);
        fleet.trackBroker(broker);
      }
      const simCount = Math.ceil(options.nodes / UNITS_PER_SIM);
      for (let s = 0; s < simCount; s++) {
        const units = Math.min(UNITS_PER_SIM, options.nodes - s * UNITS_PER_SIM);
        const args = ['--tcp', '127.0.0.1:0', '--control', '127.0.0.1:0', '--toggle-ms', String(fleet.options.toggleMs)];
        for (let u = 1; u <= units; u++) args.push('--model', '00', '--slave-id', String(u));
        const sim = await startSim(args);
        live.add(sim.child);
        fleet.sims.push(sim);
      }
      for (let i = 0; i < options.nodes; i++) {
        const id = `node-${String(i + 1).padStart(3, '0')}`;
        const dir = join(fleet.dir, id);
        mkdirSync(dir);
        fleet.nodes.push({ id, index: i, serverOrder: [0, 1, 2].map((k) => (i + k) % 3), sim: fleet.sims[Math.floor(i / UNITS_PER_SIM)]!, unit: (i % UNITS_PER_SIM) + 1, dir });
      }
      if (fleet.link) await fleet.planPartitioned(fleet.link, own);
      fleet.host = await FleetHost.connect(fleet.brokers.map((b) => b.url), GROUP, HOST_ID);
      fleet.log(`fleet: 3 brokers, ${fleet.sims.length} simulator(s), ${options.nodes} nodes planned in ${fleet.dir}`);
    } catch (error) {
      await fleet.stop();
      throw error;
    }
    return fleet;
  }

  /** The partitioned node and its simulator, both inside the namespace; its first server is broker 1 (the broker-loss scenario kills broker 0). */
  private async planPartitioned(link: NetnsLink, brokers: Mosquitto[]): Promise<void> {
    const args = ['--tcp', '127.0.0.1:0', '--control', `${link.nodeAddress}:0`, '--toggle-ms', String(this.options.toggleMs), '--model', '00', '--slave-id', '1'];
    const sim = await startSim(args, SIM_BUNDLE, link.exec);
    live.add(sim.child);
    this.sims.push(sim);
    const id = 'node-cut';
    const dir = join(this.dir, id);
    mkdirSync(dir);
    const serverOrder = [1, 2, 0];
    this.partitioned = {
      id,
      index: this.options.nodes,
      serverOrder,
      sim,
      unit: 1,
      dir,
      urls: serverOrder.map((b) => `mqtt://${link.hostAddress}:${brokers[b]!.port}`),
      address: link.nodeAddress,
      prefix: link.exec,
      keepalive: PARTITION_KEEPALIVE_S,
    };
  }

  /** Starts every node's daemon, a few at a time; resolves when all of them listen. */
  async startNodes(nodes: readonly FleetNode[] = this.nodes): Promise<void> {
    const queue = [...nodes];
    const worker = async () => {
      for (let node = queue.shift(); node; node = queue.shift()) await this.startNode(node);
    };
    await Promise.all(Array.from({ length: START_CONCURRENCY }, worker));
  }

  /** Starts one node's daemon; `sparkplug: false` gives the same daemon and board without the edge node (a baseline). */
  async startNode(node: FleetNode, { sparkplug = true } = {}): Promise<void> {
    const configFile = join(node.dir, 'config.yaml');
    writeFileSync(configFile, this.config(node, sparkplug));
    this.started.add(node);
    // The fleet speaks MQTT only: no validating HTTP proxies (two per daemon) in front of a hundred daemons.
    node.daemon = await spawnDaemon(['--config', configFile], { cwd: node.dir, tap: false, prefix: node.prefix ?? [] });
    live.add(node.daemon.child);
  }

  /** The cheapest daemon that still has moving inputs: one board over Modbus TCP, no panel, Sparkplug only. */
  private config(node: FleetNode, sparkplug: boolean): string {
    const urls = node.urls ?? node.serverOrder.map((b) => this.brokers[b]!.url);
    // Reached from the harness through the veth: anonymous reads from that address only.
    const http = node.address === undefined ? '' : `  address: ${node.address}\n  auth:\n    allow_anonymous: true\n`;
    return `alias_file: alias.yaml
apis:
${http}  panel:
    enabled: false
  sparkplug:
    enabled: ${sparkplug}
    group_id: ${GROUP}
    edge_node_id: ${node.id}
    servers:
${urls.map((url) => `      - url: ${url}`).join('\n')}
    primary_host_id: ${HOST_ID}${node.keepalive === undefined ? '' : `\n    keepalive: ${node.keepalive}`}
    write: true
    store_forward: {memory_mb: 1, file: false, max_age_s: 3600}
comm_channels:
  TCP:
    type: MODBUSTCP
    hostname: 127.0.0.1
    port: ${node.sim.tcpPort}
    timeout: 500
    retries: 1
    devices:
      1:
        model: "00"
        slave-id: ${node.unit}
        scan_frequency: ${this.options.scanHz}
`;
  }

  /** Stops one node's daemon (SIGTERM: NDEATH first; SIGKILL: the Will). */
  async stopNode(node: FleetNode, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const daemon = node.daemon;
    node.daemon = undefined;
    if (!daemon) return;
    await daemon.stop(signal);
    live.delete(daemon.child);
  }

  /** Nodes whose first server is broker `b`. */
  nodesOf(b: number): FleetNode[] {
    return this.nodes.filter((node) => node.serverOrder[0] === b);
  }

  /** Kills a broker without a word (SIGKILL); its connections drop at once. */
  async killBroker(b: number): Promise<void> {
    await this.brokers[b]!.kill('SIGKILL');
  }

  /** The simulator's own log of a node's input edges since `since` (ms). */
  async edges(node: FleetNode, since: number): Promise<Array<{ at: number; address: number; bit: number; on: boolean }>> {
    return node.sim.inputChanges(node.unit, since);
  }

  /** PIDs of the running daemons. */
  daemonPids(): number[] {
    return this.nodes.flatMap((node) => (node.daemon?.child.pid === undefined ? [] : [node.daemon.child.pid]));
  }

  /** Stops everything it started, each by its PID, and removes the temp dir. */
  async stop(): Promise<void> {
    await this.host?.close();
    await Promise.all([...this.started].map((node) => this.stopNode(node, 'SIGKILL').catch(() => undefined)));
    await Promise.all(this.sims.map(async (sim) => {
      await sim.stop().catch(() => undefined);
      live.delete(sim.child);
    }));
    const own = this.brokers.filter((broker) => !this.options.brokers?.includes(broker));
    await Promise.all(own.map((broker) => broker.kill('SIGTERM').catch(() => undefined)));
    for (const child of [...live]) if (child.exitCode !== null || child.signalCode !== null) live.delete(child);
    // After the processes inside it are gone.
    this.link?.destroy();
    rmSync(this.dir, { recursive: true, force: true });
  }

  private trackBroker(broker: Mosquitto): void {
    // A Mosquitto is restartable, so its current child is looked up when the exit hook runs.
    const proxy = { get pid() { return broker.pid; }, get exitCode() { return broker.running ? null : 0; }, signalCode: null } as unknown as ChildProcess;
    live.add(proxy);
  }
}
