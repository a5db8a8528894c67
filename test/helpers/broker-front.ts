import { once } from 'node:events';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import type { EdgeNode } from '../../src/api/sparkplug/edge-node.js';
import type { Gate } from './in-process.js';
import { TestBroker } from './mqtt-broker.js';
import { startEdgeGate } from './sparkplug-gate.js';
import { TahuHost } from './sparkplug-host.js';

// A real broker (aedes) with a Tahu-codec host on it, and a TCP front in
// front of it that the test shapes (drops a CONNECT, goes silent, ...), for
// an edge node whose first server is the front. stop() ends all of it.

export class BrokerFront {
  private readonly sockets = new Set<Socket>();
  gate: Gate | undefined;
  node: EdgeNode | undefined;

  private constructor(
    readonly broker: TestBroker,
    readonly host: TahuHost,
    private readonly server: Server,
  ) {}

  /** `serve` gets each client connection of the front; `upstream()` opens one to the broker behind. */
  static async start(serve: (client: Socket, upstream: () => Socket) => void): Promise<BrokerFront> {
    const broker = await TestBroker.start();
    const host = await TahuHost.connect(broker.url, 'plant');
    const server = createServer();
    const front = new BrokerFront(broker, host, server);
    server.on('connection', (client) => serve(front.track(client), () => front.track(connect(broker.port, '127.0.0.1'))));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return front;
  }

  /**
   * A front that relays both ways until `silence()`: from then on nothing
   * passes either way and nothing is closed, as on a cut cable or a network
   * partition, so neither end is told.
   */
  static async silenceable(): Promise<{ front: BrokerFront; silence(): void }> {
    let silent = false;
    const front = await BrokerFront.start((client, connectUpstream) => {
      const upstream = connectUpstream();
      client.on('data', (data) => silent || upstream.write(data));
      upstream.on('data', (data) => silent || client.write(data));
      client.once('close', () => upstream.destroy());
      upstream.once('close', () => client.destroy());
    });
    return { front, silence: () => (silent = true) };
  }

  /** The front's address, for the edge node's server list. */
  get url(): string {
    return `mqtt://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** The edge node in the test process, the front as its first server. */
  async startNode(edgeNodeId: string, options: Parameters<typeof startEdgeGate>[2] = {}): Promise<{ gate: Gate; node: EdgeNode }> {
    const started = await startEdgeGate(this.url, edgeNodeId, options);
    ({ gate: this.gate, node: this.node } = started);
    return started;
  }

  async stop(): Promise<void> {
    await this.node?.stop();
    await this.gate?.close();
    await this.host.close();
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    await this.broker.stop();
  }

  private track(socket: Socket): Socket {
    this.sockets.add(socket);
    socket.on('error', () => undefined);
    socket.once('close', () => this.sockets.delete(socket));
    return socket;
  }
}
