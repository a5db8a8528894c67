import { once } from 'node:events';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { serveOwConnection } from '../../src/owserver/responder.js';
import { SimulatedOneWire } from '../../src/sim/onewire.js';

// An owserver for tests: simulated devices behind the real protocol on a
// loopback TCP port, that a test can stop (connections refused), make silent
// (accepts, never answers) or make answer with bytes of its choice, and start
// again on the same port.

export type Behaviour = 'serve' | 'silent' | ((socket: Socket) => void);

export class TestOwserver {
  behaviour: Behaviour = 'serve';
  /** Requests (connections) seen while serving. */
  connections = 0;
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();

  private constructor(
    readonly devices: SimulatedOneWire,
    public port: number,
  ) {}

  static async start(families: readonly string[] = ['28', '28', '26']): Promise<TestOwserver> {
    const owserver = new TestOwserver(new SimulatedOneWire(families), 0);
    await owserver.listen();
    return owserver;
  }

  get where(): string {
    return `127.0.0.1:${this.port}`;
  }

  async listen(): Promise<void> {
    const server = createServer((socket) => {
      this.connections++;
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
      socket.on('error', () => undefined);
      const behaviour = this.behaviour;
      if (behaviour === 'serve') serveOwConnection(socket, this.devices);
      else if (behaviour !== 'silent') behaviour(socket);
    });
    server.listen(this.port, '127.0.0.1');
    await once(server, 'listening');
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  /** Refuse connections from now on (and cut the open ones), as a stopped owserver does. */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const socket of this.sockets) socket.destroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
