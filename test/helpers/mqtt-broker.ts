import Aedes from 'aedes';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';

// A real MQTT server (aedes over TCP on loopback) the tests can stop and start
// again on the same port, to play a broker that goes away. Retained messages
// live in memory, so a restarted broker has forgotten them, like a broker
// without persistence.

type AedesBroker = ReturnType<typeof Aedes.createBroker>;

export interface BrokerOptions {
  /** Accept only clients that log in with these. */
  credentials?: { username: string; password: string };
  /** Serve MQTT over TLS with this PEM key and certificate. */
  tls?: { key: Buffer; cert: Buffer };
  /** Answer each CONNECT this much later: a client torn down meanwhile gets its CONNACK late. */
  connackDelayMs?: number;
  /** Grant a subscription only once this resolves (a retained message then arrives when the test wants it). */
  beforeSubscribe?: (topic: string) => Promise<void>;
  /** Refuse (SUBACK 0x80) subscriptions whose filter this returns true for, as a broker's ACL does. */
  denySubscribe?: (filter: string) => boolean;
  /** Refuse publishes to topics this returns true for: aedes then closes the client's connection (EMQX can be set to do the same). */
  denyPublish?: (topic: string) => boolean;
}

export class TestBroker {
  private server: Server | undefined;
  private broker: AedesBroker | undefined;
  private readonly sockets = new Set<Socket>();
  port = 0;
  /** User names of the clients that connected, in order. */
  readonly logins: Array<string | undefined> = [];
  /** Subscription filters granted, in order. */
  readonly granted: string[] = [];

  private constructor(private readonly options: BrokerOptions) {}

  static async start(options: BrokerOptions = {}): Promise<TestBroker> {
    const broker = new TestBroker(options);
    await broker.listen();
    return broker;
  }

  get url(): string {
    return `mqtt://127.0.0.1:${this.port}`;
  }

  /** Listen again (on the same port after a stop). */
  async listen(): Promise<void> {
    const { credentials, tls, connackDelayMs = 0, beforeSubscribe, denySubscribe, denyPublish } = this.options;
    const broker = Aedes.createBroker({
      authenticate: (_client, username, password, done) => {
        this.logins.push(username);
        const accepted = !credentials || (username === credentials.username && password?.toString() === credentials.password);
        if (connackDelayMs > 0) setTimeout(() => done(null, accepted), connackDelayMs);
        else done(null, accepted);
      },
      authorizePublish: (_client, packet, done) => done(denyPublish?.(packet.topic) ? new Error(`publish to ${packet.topic} denied`) : null),
      authorizeSubscribe: (_client, subscription, done) => {
        const denied = denySubscribe?.(subscription.topic) === true;
        if (!denied) this.granted.push(subscription.topic);
        if (denied || !beforeSubscribe) return done(null, denied ? null : subscription);
        beforeSubscribe(subscription.topic).then(
          () => done(null, subscription),
          (error: Error) => done(error, null),
        );
      },
    });
    const serve = (socket: Socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
      broker.handle(socket);
    };
    const server = tls ? createTlsServer(tls, serve) : createServer(serve);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as AddressInfo).port;
    this.broker = broker;
    this.server = server;
  }

  /** Go away abruptly: every client connection is cut. */
  async stop(): Promise<void> {
    const { server, broker } = this;
    this.server = undefined;
    this.broker = undefined;
    for (const socket of this.sockets) socket.destroy();
    await Promise.all([
      server ? new Promise<void>((resolve) => server.close(() => resolve())) : undefined,
      broker ? new Promise<void>((resolve) => broker.close(() => resolve())) : undefined,
    ]);
  }
}
