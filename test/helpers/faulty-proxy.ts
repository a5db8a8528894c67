import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { createServer, Socket, type AddressInfo, type Server } from 'node:net';
import { join } from 'node:path';
import { seededRandom } from './faulty-line.js';
import { startSim, type SimProcess } from './sim-process.js';
import { tempDir } from './temp-dir.js';

// A Modbus TCP proxy with faults on chosen unit ids, between iogate and a
// real server (our simulator or pymodbus): it closes the client's connection
// when a unit is asked (a gateway that crashes on one slave), swallows
// requests, loses a share of replies (seeded), delays or corrupts them. Frames
// are cut by their MBAP length, so the faults hit exactly one transaction.

export class FaultyProxy {
  /** Units whose request makes the proxy close the client's connection. */
  readonly closeOn = new Set<number>();
  /** Units whose requests are swallowed (never answered). */
  readonly silent = new Set<number>();
  /** Share (0..1) of each unit's replies that are lost. */
  readonly lossy = new Map<number, number>();
  readonly delayMs = new Map<number, number>();
  /** Units whose replies arrive with a wrong function code (a protocol error). */
  readonly corrupt = new Set<number>();
  /** Units whose replies carry another unit id (the right transaction id): a gateway that mixes up its slaves. */
  readonly wrongUnit = new Map<number, number>();
  /** Requests seen per unit, forwarded or not. */
  readonly heard = new Map<number, number>();
  connections = 0;
  closes = 0;
  private random = seededRandom(15);
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    private readonly target: { host: string; port: number },
  ) {
    server.on('connection', (client) => this.serve(client));
  }

  static async start(target: { host: string; port: number }): Promise<FaultyProxy> {
    const proxy = new FaultyProxy(createServer(), target);
    proxy.server.listen(0, '127.0.0.1');
    await once(proxy.server, 'listening');
    return proxy;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    this.server.close();
    await once(this.server, 'close');
  }

  private track(socket: Socket): Socket {
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
    socket.on('error', () => {});
    return socket;
  }

  private serve(client: Socket): void {
    this.connections++;
    this.track(client);
    const upstream = this.track(new Socket());
    upstream.connect(this.target.port, this.target.host);
    const closeBoth = () => {
      client.destroy();
      upstream.destroy();
    };
    client.once('close', closeBoth);
    upstream.once('close', closeBoth);
    client.on(
      'data',
      mbapFrames((frame) => {
        const unit = frame[6]!;
        this.heard.set(unit, (this.heard.get(unit) ?? 0) + 1);
        if (this.closeOn.has(unit)) {
          this.closes++;
          closeBoth();
          return;
        }
        if (this.silent.has(unit)) return;
        upstream.write(frame);
      }),
    );
    upstream.on(
      'data',
      mbapFrames((frame) => {
        const unit = frame[6]!;
        const loss = this.lossy.get(unit);
        if (loss !== undefined && this.random() < loss) return;
        if (this.corrupt.has(unit)) {
          frame = Buffer.from(frame);
          frame[7] = 0x2b;
        }
        const claimed = this.wrongUnit.get(unit);
        if (claimed !== undefined) {
          frame = Buffer.from(frame);
          frame[6] = claimed;
        }
        const delay = this.delayMs.get(unit);
        if (delay) setTimeout(() => client.write(frame), delay);
        else client.write(frame);
      }),
    );
  }
}

/** Cuts a byte stream into MBAP frames (7-byte header, length at offset 4 counts from the unit id). */
function mbapFrames(onFrame: (frame: Buffer) => void): (chunk: Buffer) => void {
  let pending: Buffer = Buffer.alloc(0);
  return (chunk) => {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    while (pending.length >= 7) {
      const size = 6 + pending.readUInt16BE(4);
      if (pending.length < size) break;
      onFrame(pending.subarray(0, size));
      pending = pending.subarray(size);
    }
  };
}

export interface ProxiedSim {
  sim: SimProcess;
  proxy: FaultyProxy;
  /** config.yaml in a fresh directory (its aliases beside it); the test writes its variants next to it. */
  configPath: string;
  stop(): Promise<void>;
}

/**
 * Boards simulated in another process (they keep their outputs while iogate
 * dies, as boards do) behind a FaultyProxy, and a config.yaml whose bus `BUS`
 * reaches them through the proxy: 150 ms timeout and no retry, so a silenced
 * board shows at once; each board scanned at 20 Hz. `sections` (the
 * interlocks, covers or automations under test) follow the bus.
 */
export async function startSimBehindProxy(boards: Array<{ unit: number; model: string }>, sections: string, dirPrefix: string): Promise<ProxiedSim> {
  const sim = await startSim([...boards.flatMap(({ unit, model }) => ['--model', model, '--slave-id', String(unit)]), '--tcp', '127.0.0.1:0', '--control', '127.0.0.1:0']);
  const proxy = await FaultyProxy.start({ host: '127.0.0.1', port: sim.tcpPort! }).catch(async (error) => {
    await sim.stop();
    throw error;
  });
  const dir = tempDir(dirPrefix);
  const configPath = join(dir, 'config.yaml');
  writeFileSync(
    configPath,
    [
      `alias_file: ${join(dir, 'alias.yaml')}`,
      'comm_channels:',
      '  BUS:',
      '    type: MODBUSTCP',
      '    hostname: 127.0.0.1',
      `    port: ${proxy.port}`,
      '    timeout: 150',
      '    retries: 0',
      '    devices:',
      ...boards.flatMap(({ unit, model }) => [`      ${unit}:`, `        model: '${model}'`, `        slave-id: ${unit}`, '        scan_frequency: 20']),
      sections,
    ].join('\n'),
  );
  return {
    sim,
    proxy,
    configPath,
    async stop() {
      await proxy.stop();
      await sim.stop();
    },
  };
}
