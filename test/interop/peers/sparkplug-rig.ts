import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startSim, type SimProcess } from '../../helpers/sim-process.js';
import { spawnDaemon, type SpawnedDaemon } from '../../helpers/spawn-daemon.js';
import { tempDir } from '../../helpers/temp-dir.js';

// The pieces a Sparkplug interop test puts together: the simulator as its own
// process (Modbus TCP, with its control endpoint, so outputs are read back
// there and not through iogate), and the bundled daemon with an
// `apis.sparkplug` section, restartable on the same config and state folder.

export interface RigOptions {
  groupId?: string;
  edgeNodeId?: string;
  /** URLs, or a URL with TLS files (`ca`, `cert`, `key`). */
  servers: Array<string | { url: string; ca?: string; cert?: string; key?: string }>;
  primaryHostId?: string;
  write?: boolean;
  storeForward?: { memoryMb?: number; file?: boolean; maxAgeS?: number };
  /** Simulator input stepping period, ms (0: still). */
  toggleMs?: number;
  /** Scan rate of each slave, Hz. */
  scanHz?: number;
}

/** Units of the simulator: a Neuron brain section (00) and an E-16DI14DI extension (0A). */
export const UNITS = [
  { unit: 1, model: '00' },
  { unit: 2, model: '0A' },
] as const;

export class SparkplugRig {
  daemon: SpawnedDaemon | undefined;
  readonly dir = tempDir('iogate-spb-');
  readonly configFile = join(this.dir, 'config.yaml');

  private constructor(
    readonly sim: SimProcess,
    readonly options: RigOptions,
  ) {}

  static async start(options: RigOptions): Promise<SparkplugRig> {
    const args = ['--tcp', '127.0.0.1:0', '--control', '127.0.0.1:0', '--toggle-ms', String(options.toggleMs ?? 0)];
    for (const { unit, model } of UNITS) args.push('--model', model, '--slave-id', String(unit));
    const sim = await startSim(args);
    const rig = new SparkplugRig(sim, options);
    rig.writeConfig();
    await rig.startDaemon();
    return rig;
  }

  get edgeNodeId(): string {
    return this.options.edgeNodeId ?? 'edge1';
  }

  get groupId(): string {
    return this.options.groupId ?? 'plant';
  }

  writeConfig(): void {
    const { servers, primaryHostId, write = true, storeForward = {}, scanHz = 50 } = this.options;
    const sf = storeForward;
    const devices = UNITS.map(({ unit, model }) => `      ${unit}:\n        model: "${model}"\n        slave-id: ${unit}\n        scan_frequency: ${scanHz}`).join('\n');
    writeFileSync(
      this.configFile,
      `alias_file: alias.yaml
apis:
  sparkplug:
    enabled: true
    group_id: ${this.groupId}
    edge_node_id: ${this.edgeNodeId}
    servers:
${servers.map(serverLines).join('\n')}
${primaryHostId === undefined ? '' : `    primary_host_id: ${primaryHostId}\n`}    write: ${write}
    store_forward: {memory_mb: ${sf.memoryMb ?? 8}, file: ${sf.file ?? false}, max_age_s: ${sf.maxAgeS ?? 86400}}
comm_channels:
  TCP:
    type: MODBUSTCP
    hostname: 127.0.0.1
    port: ${this.sim.tcpPort}
    timeout: 100
    retries: 0
    devices:
${devices}
`,
    );
  }

  async startDaemon(): Promise<SpawnedDaemon> {
    this.daemon = await spawnDaemon(['--config', this.configFile], { cwd: this.dir });
    return this.daemon;
  }

  async restartDaemon(signal: NodeJS.Signals): Promise<SpawnedDaemon> {
    await this.daemon?.stop(signal);
    return this.startDaemon();
  }

  /** The daemon's /metrics value of a sample (first match of `name{labels}` or `name`). */
  async metric(name: string, labels = ''): Promise<number> {
    const text = await (await fetch(`${this.daemon!.baseUrl}/metrics`)).text();
    const line = text.split('\n').find((row) => row.startsWith(labels === '' ? `${name} ` : `${name}{${labels}}`) || (labels === '' && row.startsWith(`${name}{`)));
    if (line === undefined) throw new Error(`no ${name} in /metrics`);
    return Number(line.slice(line.lastIndexOf(' ') + 1));
  }

  async stop(): Promise<void> {
    await this.daemon?.stop('SIGTERM');
    await this.sim.stop();
  }
}

function serverLines(server: RigOptions['servers'][number]): string {
  if (typeof server === 'string') return `      - url: ${server}`;
  const files = (['ca', 'cert', 'key'] as const).filter((key) => server[key] !== undefined).map((key) => `\n        ${key}: ${server[key]}`);
  return `      - url: ${server.url}${files.join('')}`;
}

/** Resolves once the asynchronous `condition` holds (checked every 50 ms); fails after `limitMs`. */
export async function untilTrue(condition: () => Promise<boolean>, what: string, limitMs = 30_000): Promise<void> {
  const deadline = Date.now() + limitMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
