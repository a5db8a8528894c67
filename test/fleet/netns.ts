import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

// A network namespace with one veth pair to the host, for the fleet's
// partition scenario: a node (and its simulator) run inside it and reach the
// brokers only through the link, which can be cut (`ip link set … down`)
// and restored. Host side 10.a.b.(4n+1)/30, inside 10.a.b.(4n+2)/30, chosen
// from this process's PID so parallel runs do not collide.
//
// Everything is named after this process's PID (`iogate-fleet-<pid>-<n>`,
// veth `iog<pid>h<n>`/`iog<pid>p<n>`) and deleted by that name: by destroy()
// in the caller's finally, by an exit hook, and by the next harness run when
// the PID in a left-over name is no longer alive.

const IP = '/usr/sbin/ip';
const PREFIX = 'iogate-fleet-';
/** Every `ip` call is bounded. */
const IP_TIMEOUT_MS = 5000;

const live = new Set<NetnsLink>();
let hooked = false;
let counter = 0;

function ip(args: string[]): string {
  return execFileSync(IP, args, { timeout: IP_TIMEOUT_MS, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

function quietly(run: () => unknown): void {
  try {
    run();
  } catch {
    // already gone
  }
}

export class NetnsLink {
  private constructor(
    readonly name: string,
    /** The veth end on the host, whose state is the link's. */
    readonly hostIf: string,
    readonly peerIf: string,
    readonly hostAddress: string,
    readonly nodeAddress: string,
  ) {}

  /** Why namespaces cannot be made here (not root, no iproute2, no permission), or undefined when they can. */
  static unavailable(): string | undefined {
    if (process.platform !== 'linux') return 'network namespaces are Linux only';
    if (process.getuid?.() !== 0) return 'needs root (ip netns add)';
    if (!existsSync(IP)) return `${IP} (iproute2) is not installed`;
    const probe = `${PREFIX}${process.pid}-probe`;
    try {
      ip(['netns', 'add', probe]);
    } catch (error) {
      return `ip netns add failed: ${((error as { stderr?: string }).stderr ?? (error as Error).message).trim()}`;
    } finally {
      quietly(() => ip(['netns', 'del', probe]));
    }
    return undefined;
  }

  /** Creates the namespace (with `lo` up) and the veth pair, both ends up and addressed. */
  static create(): NetnsLink {
    hookExit();
    sweepStale();
    const n = counter++;
    const k = (process.pid * 4 + n) & 0xfffff;
    const net = `10.${128 + ((k >> 14) & 63)}.${(k >> 6) & 255}.${(k & 63) * 4}`;
    const base = net.slice(0, net.lastIndexOf('.') + 1);
    const last = Number(net.slice(net.lastIndexOf('.') + 1));
    const used = ip(['-4', '-o', 'addr', 'show']);
    if (used.includes(` ${base}${last + 1}/`) || used.includes(` ${base}${last + 2}/`)) throw new Error(`${net}/30 is in use on this machine`);
    const link = new NetnsLink(`${PREFIX}${process.pid}-${n}`, `iog${process.pid}h${n}`, `iog${process.pid}p${n}`, `${base}${last + 1}`, `${base}${last + 2}`);
    live.add(link);
    try {
      ip(['netns', 'add', link.name]);
      ip(['link', 'add', link.hostIf, 'type', 'veth', 'peer', 'name', link.peerIf]);
      ip(['link', 'set', link.peerIf, 'netns', link.name]);
      ip(['addr', 'add', `${link.hostAddress}/30`, 'dev', link.hostIf]);
      ip(['link', 'set', link.hostIf, 'up']);
      ip(['-n', link.name, 'addr', 'add', `${link.nodeAddress}/30`, 'dev', link.peerIf]);
      ip(['-n', link.name, 'link', 'set', link.peerIf, 'up']);
      ip(['-n', link.name, 'link', 'set', 'lo', 'up']);
    } catch (error) {
      link.destroy();
      throw error;
    }
    return link;
  }

  /** The command prefix that runs a program inside the namespace (ip execs it: the PID is the program's). */
  get exec(): string[] {
    return [IP, 'netns', 'exec', this.name];
  }

  /** Cuts the link: no packet passes either way, and neither side is told (no reset, no close). */
  cut(): void {
    ip(['link', 'set', this.hostIf, 'down']);
  }

  restore(): void {
    ip(['link', 'set', this.hostIf, 'up']);
  }

  /** Deletes the namespace and the veth pair (stop the processes inside first). */
  destroy(): void {
    quietly(() => ip(['netns', 'del', this.name]));
    quietly(() => ip(['link', 'del', this.hostIf]));
    live.delete(this);
  }
}

/** Deletes namespaces this harness left behind in runs whose process is gone (a SIGKILLed test runner). */
function sweepStale(): void {
  let names: string[];
  try {
    names = ip(['netns', 'list']).split('\n').map((line) => line.split(' ')[0]!);
  } catch {
    return;
  }
  for (const name of names) {
    const match = new RegExp(`^${PREFIX}(\\d+)-(\\d+|probe)$`).exec(name);
    if (!match || alive(Number(match[1]))) continue;
    quietly(() => ip(['netns', 'del', name]));
    if (match[2] !== 'probe') quietly(() => ip(['link', 'del', `iog${match[1]}h${match[2]}`]));
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function hookExit(): void {
  if (hooked) return;
  hooked = true;
  // Registered after the fleet's hook, so it runs after the processes inside were killed.
  process.on('exit', () => {
    for (const link of [...live]) link.destroy();
  });
}
