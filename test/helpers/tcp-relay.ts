import { once } from 'node:events';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

// A plain TCP relay on a loopback port to a server behind it, which a test
// can cut (every connection reset, new ones refused: the server looks down to
// whoever goes through the relay) and restore on the same port, while other
// clients of the server stay connected. Bytes pass untouched, so TLS runs end
// to end through it.

export class TcpRelay {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly targetPort: number,
    private listenPort: number,
  ) {}

  static async start(targetPort: number): Promise<TcpRelay> {
    const relay = new TcpRelay(targetPort, 0);
    await relay.restore();
    return relay;
  }

  get port(): number {
    return this.listenPort;
  }

  /** Listens (again, on the same port) and relays. */
  async restore(): Promise<void> {
    if (this.server) return;
    const server = createServer((client) => {
      const upstream = connect(this.targetPort, '127.0.0.1');
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('error', () => undefined);
        socket.once('close', () => {
          this.sockets.delete(socket);
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream);
      upstream.pipe(client);
    });
    server.listen(this.listenPort, '127.0.0.1');
    await once(server, 'listening');
    this.listenPort = (server.address() as AddressInfo).port;
    this.server = server;
  }

  /** Resets every relayed connection and stops listening. */
  async cut(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const socket of this.sockets) socket.resetAndDestroy();
    await closed;
  }
}
