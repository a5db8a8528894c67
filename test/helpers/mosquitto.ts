import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { connect, createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { tempDir } from './temp-dir.js';
import { endWithThisProcess } from './orphan-guard.mjs';

// Eclipse Mosquitto on a free loopback port, and its command-line clients
// (mosquitto_sub, mosquitto_pub) as the test's eyes and hands: what a user's
// tools see on the wire.

const MOSQUITTO = '/usr/sbin/mosquitto';
const run = promisify(execFile);

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port: free } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return free;
}

export class Mosquitto {
  private broker: ChildProcess | undefined;

  /** Arguments the command-line clients need besides host and port (TLS files). */
  private clientArgs: string[] = [];

  private constructor(
    readonly port: number,
    private readonly confFile: string,
  ) {}

  /**
   * A broker with a config of the test's own (TLS listeners, ACLs): `configure`
   * gets the port and returns the file's text; `clientArgs` are what
   * mosquitto_sub and mosquitto_pub need to get in (e.g. a client certificate).
   */
  static async startWith(configure: (port: number) => string, clientArgs: string[] = []): Promise<Mosquitto> {
    const port = await freePort();
    const confFile = join(tempDir('iogate-mosquitto-'), 'mosquitto.conf');
    writeFileSync(confFile, configure(port));
    const mosquitto = new Mosquitto(port, confFile);
    mosquitto.clientArgs = clientArgs;
    await mosquitto.restart();
    return mosquitto;
  }

  /** Replaces the config, for the next restart(). */
  reconfigure(text: string): void {
    writeFileSync(this.confFile, text);
  }

  static async start(): Promise<Mosquitto> {
    const port = await freePort();
    const dir = tempDir('iogate-mosquitto-');
    const confFile = join(dir, 'mosquitto.conf');
    writeFileSync(confFile, `listener ${port} 127.0.0.1\nallow_anonymous true\npersistence false\n`);
    const mosquitto = new Mosquitto(port, confFile);
    await mosquitto.restart();
    return mosquitto;
  }

  /** Starts the broker (again, on the same port) and waits until it accepts connections. */
  async restart(): Promise<void> {
    this.broker = endWithThisProcess(spawn(MOSQUITTO, ['-c', this.confFile], { stdio: ['ignore', 'ignore', 'pipe'] }));
    const deadline = Date.now() + 5000;
    while (Date.now() < deadline) {
      const accepting = await new Promise<boolean>((resolve) => {
        const socket = connect(this.port, '127.0.0.1', () => {
          socket.destroy();
          resolve(true);
        });
        socket.once('error', () => resolve(false));
      });
      if (accepting) return;
      await sleep(50);
    }
    throw new Error('mosquitto did not start listening');
  }

  /** SIGHUP: Mosquitto reads its ACL file again, keeping its clients connected. */
  reload(): void {
    this.broker?.kill('SIGHUP');
  }

  async stop(): Promise<void> {
    const broker = this.broker;
    if (!broker || broker.exitCode !== null) return;
    broker.kill('SIGTERM');
    await once(broker, 'exit');
    this.broker = undefined;
  }

  subscribe(filter: string | string[]): Subscriber {
    return new Subscriber(this.port, filter, this.clientArgs);
  }

  /** What a late mosquitto_sub gets as retained message on `topic`. */
  async retainedOn(topic: string): Promise<string> {
    const { stdout } = await run('mosquitto_sub', ['-h', '127.0.0.1', '-p', String(this.port), ...this.clientArgs, '-t', topic, '--retained-only', '-C', '1', '-W', '10']);
    return stdout.trim();
  }

  async publish(topic: string, message: string): Promise<void> {
    await this.pub(['-t', topic, '-m', message]);
  }

  /** mosquitto_pub at QoS 1 with further arguments of its own (-r, -f FILE, -n). */
  async pub(args: string[]): Promise<void> {
    await run('mosquitto_pub', ['-h', '127.0.0.1', '-p', String(this.port), ...this.clientArgs, '-q', '1', ...args], { maxBuffer: 1024 * 1024 });
  }
}

/** A running mosquitto_sub; lines are `topic<TAB>retain flag<TAB>payload`. */
export class Subscriber {
  readonly lines: Array<{ topic: string; retained: boolean; payload: string }> = [];
  private readonly child: ChildProcess;

  constructor(port: number, filter: string | string[], clientArgs: string[] = []) {
    const filters = (Array.isArray(filter) ? filter : [filter]).flatMap((one) => ['-t', one]);
    this.child = endWithThisProcess(spawn('mosquitto_sub', ['-h', '127.0.0.1', '-p', String(port), ...clientArgs, '-q', '1', ...filters, '-F', '%t\t%r\t%p'], {
      stdio: ['ignore', 'pipe', 'ignore'],
    }));
    let buffered = '';
    this.child.stdout!.setEncoding('utf8');
    this.child.stdout!.on('data', (chunk: string) => {
      buffered += chunk;
      const lines = buffered.split('\n');
      buffered = lines.pop()!;
      for (const line of lines) {
        const [topic, retained, ...payload] = line.split('\t');
        this.lines.push({ topic: topic!, retained: retained === '1', payload: payload.join('\t') });
      }
    });
  }

  async waitFor(topic: string, accept: (payload: string) => boolean = () => true, timeoutMs = 10_000): Promise<{ retained: boolean; payload: string }> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.lines.find((line) => line.topic === topic && accept(line.payload));
      if (found) return found;
      if (Date.now() > deadline) {
        throw new Error(`mosquitto_sub saw no matching ${topic}; got ${JSON.stringify(this.lines.filter((line) => line.topic === topic))}`);
      }
      await sleep(25);
    }
  }

  forget(): void {
    this.lines.length = 0;
  }

  close(): void {
    this.child.kill();
  }
}
