import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { freePort } from '../free-port.js';
import { tempDir } from '../../helpers/temp-dir.js';
import { endWithThisProcess } from '../../helpers/orphan-guard.mjs';

// Debian's mosquitto as a test broker: one instance per call on a free
// loopback port, no persistence, anonymous; it can be killed (SIGKILL, to play
// a broker that dies) and started again on the same port. `alsoOn` adds a
// listener on the same port at each given address (an address of an interface
// the test itself created, such as a veth end).

export const MOSQUITTO = '/usr/sbin/mosquitto';

export class Mosquitto {
  private child: ChildProcess | undefined;
  private output = '';

  private constructor(
    readonly port: number,
    private readonly confFile: string,
  ) {}

  static async start({ alsoOn = [] }: { alsoOn?: string[] } = {}): Promise<Mosquitto> {
    const dir = tempDir('iogate-mosquitto-');
    const port = await freePort();
    const confFile = join(dir, 'mosquitto.conf');
    const listeners = ['127.0.0.1', ...alsoOn].map((address) => `listener ${port} ${address}\n`).join('');
    writeFileSync(confFile, `${listeners}allow_anonymous true\npersistence false\nmax_queued_messages 100000\n`);
    const broker = new Mosquitto(port, confFile);
    await broker.run();
    return broker;
  }

  get url(): string {
    return `mqtt://127.0.0.1:${this.port}`;
  }

  /** The broker's process id while it runs. */
  get pid(): number | undefined {
    return this.running ? this.child!.pid : undefined;
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Starts it (again, on the same port) and waits until it accepts connections. */
  async run(): Promise<void> {
    if (this.running) return;
    this.output = '';
    const child = endWithThisProcess(spawn(MOSQUITTO, ['-c', this.confFile], { stdio: ['ignore', 'ignore', 'pipe'] }));
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => (this.output = (this.output + chunk).slice(-4000)));
    this.child = child;
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      if (child.exitCode !== null) throw new Error(`mosquitto exited with ${child.exitCode}: ${this.output}`);
      if (await accepting(this.port)) return;
      await new Promise((resolve) => setTimeout(resolve, 30));
    }
    throw new Error(`mosquitto did not listen on ${this.port}: ${this.output}`);
  }

  /** Stops it (SIGKILL: the broker vanishes without a word; SIGTERM: it closes its connections). */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const child = this.child;
    if (!child || !this.running) return;
    child.kill(signal);
    await once(child, 'exit');
    this.child = undefined;
  }
}

function accepting(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
