import { readFileSync } from 'node:fs';
import { connect, type IClientOptions, type MqttClient } from 'mqtt';
import type { SparkplugConfig, SparkplugServer } from '../../config/types.js';
import type { Logger } from '../../logging/log.js';
import { closeClient } from '../mqtt/close-client.js';
import { type ConnectFailureCounts, connectFailureReason, countFailure, describeConnectFailure, isSubscribeRefusal } from '../mqtt/connect-failure.js';
import { BdSeqStore } from './bdseq-store.js';
import { bdSeqMetric } from './node-metrics.js';
import { DEFAULT_DECODE_LIMITS } from './payload-decode.js';
import { encodePayload } from './payload-encode.js';
import type { QuietLog } from './quiet-log.js';
import type { StoreForward } from './store-forward.js';
import { FIRST_RETRY_MS, ServerWalk } from './server-walk.js';
import { SparkplugTopics } from './topics.js';
import type { UnconfirmedTail } from './unconfirmed.js';

// The edge node's MQTT session, from CONNECT to its end: one connection at a
// time, to the server the walk is on. Each CONNECT gets the next bdSeq, saved
// before it is sent, and carries the NDEATH with that bdSeq as its Will (QoS 1,
// not retained). Once connected, the primary host's STATE (when one is set)
// and the commands are subscribed before anything is born. A connection that
// fails or is lost is classified, counted and logged, what the broker never
// confirmed goes back to store-and-forward, and the walk goes on to the next
// server after its back-off. A session ends with exactly one NDEATH. When to be
// born, what to do with a message and what going quiet means are the node's
// (edge-node.ts), told through SessionEvents.

const CONNECT_TIMEOUT_MS = 10_000;
/**
 * A session lost this soon after its birth counts as a failed attempt, not
 * as a session: a broker that disconnects a client whose publish its ACL
 * denies (aedes does; EMQX can be set to) drops us right after the NBIRTH, and
 * without this the node would reconnect and be born again four times a second.
 */
const BRIEF_SESSION_MS = 3000;
/** MQTT 5 reason code "Not authorized", in a DISCONNECT from the broker. */
const NOT_AUTHORIZED = 0x87;
/** Socket errors that mean no CONNECT reached any broker. */
const UNREACHED: ReadonlySet<string> = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
/** Room for the MQTT header and topic above the largest command payload accepted (MQTT 5 brokers enforce it). */
const MAX_PACKET_BYTES = DEFAULT_DECODE_LIMITS.maxBytes + 1024;
/**
 * MQTT 5's "Disconnect with Will Message": the broker publishes our Will (the
 * NDEATH) as the session ends, which is how Sparkplug 3.0 wants an MQTT 5
 * edge node to leave. MQTT 3.1.1 has no such code: there a DISCONNECT drops
 * the Will, so the NDEATH is published by hand first.
 */
const DISCONNECT_WITH_WILL = 0x04;

/** What the session tells the node. */
export interface SessionEvents {
  /** Connected, about to subscribe: a retained STATE may arrive before `subscribed`. */
  connected(): void;
  /** The commands (and the primary host's STATE) are subscribed on `client`: the node may be born. */
  subscribed(client: MqttClient): void;
  message(client: MqttClient, topic: string, payload: Buffer, retained: boolean): void;
  /** Whether the node is born (live) on the current connection. */
  born(): boolean;
  /** The connection ended or is about to: no more DATA until the next birth. */
  quiet(): void;
}

export interface SessionOptions {
  config: SparkplugConfig;
  topics: SparkplugTopics;
  stateDir: string;
  /** The changes sent and not confirmed by the broker yet (unconfirmed.ts). */
  tail: UnconfirmedTail;
  /** Store-and-forward, where the unconfirmed changes go when a connection is lost. */
  buffer: StoreForward;
  quiet: QuietLog;
  counts: { connects: number };
  log: Logger;
  events: SessionEvents;
}

export class MqttSession {
  private readonly bdSeqStore: BdSeqStore;
  private readonly walk: ServerWalk;
  private connection: MqttClient | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private currentBdSeq: number | undefined;
  private stopping = false;
  /** The current connection has birthed at least once (a later loss starts a fresh round of servers). */
  private sessionBorn = false;
  /** When the current connection's first birth was sent (performance.now()). */
  private sessionBornAt = 0;
  /** The node itself ends the current connection (host offline, Next Server): not the broker's doing. */
  private leaving = false;
  /** Try the same server again (it refused MQTT 5 and is now spoken to in 3.1.1). */
  private retrySame = false;
  /** The last attempt never reached a broker (refused, unreachable): its bdSeq may be used again. */
  private neverReached = false;
  /** Failed connections (and denied subscriptions) by reason. */
  readonly connectFailures: ConnectFailureCounts = {};

  constructor(private readonly options: SessionOptions) {
    const { config, topics, log } = options;
    this.walk = new ServerWalk(config.servers);
    this.bdSeqStore = new BdSeqStore(options.stateDir, `${topics.groupId}-${topics.edgeNodeId}`);
    if (this.bdSeqStore.warning) log.warn(`Sparkplug: ${this.bdSeqStore.warning}`);
  }

  /** The connection of the session, connected or still connecting; undefined between attempts. */
  get client(): MqttClient | undefined {
    return this.connection;
  }

  /** The bdSeq of the current (or last) CONNECT. */
  get bdSeq(): number | undefined {
    return this.currentBdSeq;
  }

  /** URL of the server the session is on, or undefined while none. */
  get server(): string | undefined {
    return this.connection?.connected ? this.walk.current.server.url : undefined;
  }

  start(): void {
    void this.connectNext();
  }

  /** The node was born on this connection (its first birth dates the session, see BRIEF_SESSION_MS). */
  birthSent(): void {
    if (!this.sessionBorn) this.sessionBornAt = performance.now();
    this.sessionBorn = true;
  }

  /**
   * NDEATH, then disconnect; the client is closed for good, listeners
   * included, before this resolves, and no further attempt is made.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.retryTimer);
    const client = this.connection;
    this.connection = undefined;
    if (client) await this.disconnect(client, true);
  }

  /** NDEATH, disconnect, and on to the next server (host offline, or asked to). */
  leave(reason: string): void {
    const client = this.connection;
    if (!client) return;
    this.options.log.info(`Sparkplug: leaving ${this.walk.current.server.url}: ${reason}`);
    this.leaving = true;
    this.options.events.quiet();
    // The connection's close walks on to the next server (see connectNext).
    void this.disconnect(client, false);
  }

  private async connectNext(): Promise<void> {
    if (this.stopping) return;
    const { log, topics, events } = this.options;
    const { server, index } = this.walk.current;
    let bdSeq: number;
    try {
      bdSeq = await this.bdSeqStore.next(this.neverReached);
    } catch (error) {
      // Without a saved bdSeq a host could pair the wrong death with our birth: do not connect.
      log.error(`Sparkplug: cannot save bdSeq to ${this.bdSeqStore.path}: ${(error as Error).message}; retrying`);
      this.scheduleNext(false);
      return;
    }
    if (this.stopping) return;
    this.currentBdSeq = bdSeq;
    this.sessionBorn = false;
    this.leaving = false;
    this.neverReached = false;
    const client = connect(server.url, this.clientOptions(server, index, bdSeq));
    this.connection = client;
    this.options.tail.watch(client);
    let settled = false;
    client.on('connect', () => {
      settled = true;
      this.options.counts.connects++;
      log.info(`Sparkplug: connected to ${server.url} as ${topics.groupId}/${topics.edgeNodeId}, bdSeq ${bdSeq}`);
      void this.subscribe(client);
    });
    client.on('message', (topic, payload, packet) => events.message(client, topic, payload, packet.retain));
    // An MQTT 5 broker says why it ends the session (0x87: not authorized, an ACL).
    let disconnectCode: number | undefined;
    client.on('disconnect', (packet) => (disconnectCode = packet.reasonCode));
    // Every failure ends in 'close'; errors are only reported here (mqtt.js would throw without a listener).
    client.on('error', (error: Error & { code?: number | string }) => {
      if (!settled && typeof error.code === 'string' && UNREACHED.has(error.code)) this.neverReached = true;
      if (!settled && (error.code === 1 || error.code === 132) && this.walk.fallBackTo311(index)) {
        this.retrySame = true;
        log.info(`Sparkplug: ${server.url} does not speak MQTT 5; using MQTT 3.1.1 with it`);
        return;
      }
      const reason = connectFailureReason(error);
      countFailure(this.connectFailures, reason);
      // A TLS or login failure has a known cause: the close that follows is not an MQTT 5 refusal to retry in 3.1.1.
      // (A reset or a plain close stays a candidate: some 3.1.1-only brokers drop an MQTT 5 CONNECT so.)
      if (!settled && !['other', 'unreachable', 'refused'].includes(reason)) this.neverReached = true;
      // Per server and cause: a new cause is logged at once, a repeated one at most once a minute.
      this.options.quiet.note(`server-${index}-${reason}`, `Sparkplug: ${server.url}: ${describeConnectFailure(reason, error)}; trying the next server`);
    });
    client.once('close', () => {
      if (this.connection !== client) return;
      this.connection = undefined;
      client.end(true);
      // Some 3.1.1-only brokers (RabbitMQ before 3.13) drop an MQTT 5 CONNECT without a CONNACK.
      if (!settled && !this.neverReached && !this.retrySame && this.walk.fallBackTo311(index)) {
        this.retrySame = true;
        log.info(`Sparkplug: ${server.url} closed the connection before accepting MQTT 5; trying MQTT 3.1.1 with it`);
      }
      this.lost(server.url, settled, disconnectCode);
    });
  }

  private clientOptions(server: SparkplugServer, index: number, bdSeq: number): IClientOptions {
    const { topics, config } = this.options;
    const v5 = !this.walk.speaks311(index);
    const options: IClientOptions = {
      clientId: `iogate-${topics.groupId}-${topics.edgeNodeId}`.slice(0, 64),
      clean: true,
      keepalive: config.keepaliveS,
      reconnectPeriod: 0,
      connectTimeout: CONNECT_TIMEOUT_MS,
      queueQoSZero: false,
      resubscribe: false,
      protocolVersion: v5 ? 5 : 4,
      will: { topic: topics.node('NDEATH'), payload: Buffer.from(deathPayload(bdSeq)), qos: 1, retain: false },
    };
    // Clean Start with Session Expiry 0, and a bound on what the broker may send us.
    if (v5) options.properties = { sessionExpiryInterval: 0, maximumPacketSize: MAX_PACKET_BYTES };
    if (server.username !== undefined) options.username = server.username;
    if (server.password !== undefined) options.password = server.password;
    if (server.ca !== undefined) options.ca = readFileSync(server.ca);
    if (server.cert !== undefined) options.cert = readFileSync(server.cert);
    if (server.key !== undefined) options.key = readFileSync(server.key);
    return options;
  }

  private async subscribe(client: MqttClient): Promise<void> {
    const { config, topics, log, events } = this.options;
    events.connected();
    try {
      if (config.primaryHostId !== undefined) {
        // First of all, so a retained STATE is known before anything is born.
        await client.subscribeAsync(SparkplugTopics.state(config.primaryHostId), { qos: 1 });
      }
      await client.subscribeAsync([topics.ncmd, topics.dcmdFilter], { qos: 1 });
    } catch (error) {
      // A SUBACK failure code (0x80, or 0x87 "not authorized" in MQTT 5): the broker's ACL denies our topics.
      // Without commands (or the host's STATE) this server is no use: treated as down, like a failed connect.
      const { index, server } = this.walk.current;
      if (isSubscribeRefusal(error as Error)) {
        countFailure(this.connectFailures, 'subscribe_denied');
        this.options.quiet.note(`server-${index}-subscribe_denied`, `Sparkplug: ${server.url}: ${describeConnectFailure('subscribe_denied', error as Error)}; trying the next server`);
      } else {
        log.warn(`Sparkplug: ${server.url}: cannot subscribe: ${(error as Error).message}; trying the next server`);
      }
      client.end(true);
      return;
    }
    if (this.connection !== client) return;
    events.subscribed(client);
  }

  private lost(url: string, wasConnected: boolean, disconnectCode: number | undefined): void {
    const { tail, buffer, events } = this.options;
    const wasBorn = events.born();
    events.quiet();
    // What the broker never confirmed may have died with the link: replayed after the next birth.
    const unconfirmed = tail.takeAll();
    for (const change of unconfirmed) buffer.push(change);
    if (this.stopping) return;
    const brief = wasConnected && this.sessionBorn && !this.leaving && performance.now() - this.sessionBornAt < BRIEF_SESSION_MS;
    if (brief) {
      const reason = disconnectCode === NOT_AUTHORIZED ? 'publish_denied' : 'dropped_after_birth';
      countFailure(this.connectFailures, reason);
      const after = `the broker ended the session ${Math.round(performance.now() - this.sessionBornAt)} ms after our birth`;
      const code = disconnectCode === undefined ? '' : ` (DISCONNECT reason code 0x${disconnectCode.toString(16)})`;
      this.options.quiet.note(`server-${this.walk.current.index}-${reason}`, `Sparkplug: ${url}: ${describeConnectFailure(reason, new Error(`${after}${code}`))}; changes are kept; trying the next server`);
    } else if (wasConnected && wasBorn) {
      const kept = unconfirmed.length > 0 ? ` (and the ${unconfirmed.length} sent since the broker last answered)` : '';
      this.options.log.warn(`Sparkplug: lost ${url}; changes are kept until the next birth${kept}`);
    }
    if (this.retrySame) {
      this.retrySame = false;
      clearTimeout(this.retryTimer);
      this.retryTimer = setTimeout(() => void this.connectNext(), FIRST_RETRY_MS);
      return;
    }
    this.scheduleNext(this.sessionBorn && !brief);
  }

  private scheduleNext(hadSession: boolean): void {
    const delay = this.walk.advance(hadSession);
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => void this.connectNext(), delay);
  }

  /**
   * Ends a session with one NDEATH: over MQTT 5 the DISCONNECT asks the broker
   * to publish the Will; over 3.1.1 our NDEATH goes first and the DISCONNECT
   * (not a bare close) makes the broker discard the Will. `forGood` (a stop)
   * also drops every listener and attempt of the client (see close-client.ts).
   */
  private async disconnect(client: MqttClient, forGood: boolean): Promise<void> {
    const mqtt5 = client.options.protocolVersion === 5;
    if (mqtt5 || !client.connected) {
      const disconnect = { reasonCode: DISCONNECT_WITH_WILL };
      if (forGood) await closeClient(client, { graceful: true, disconnect });
      else client.end(!client.connected, disconnect);
      return;
    }
    const death = this.publishDeath(client).then((acknowledged) => {
      // Its PUBACK comes after everything written before it was read.
      if (acknowledged && this.connection === client) this.options.tail.confirmAll();
    });
    if (forGood) {
      // The DISCONNECT waits for the NDEATH's acknowledgement, within closeClient's bound.
      await closeClient(client, { graceful: true });
      return;
    }
    await death;
    client.end(false);
  }

  /** Resolves true once the broker acknowledged the NDEATH. */
  private publishDeath(client: MqttClient): Promise<boolean> {
    return new Promise((resolve) => {
      if (!client.connected || this.currentBdSeq === undefined) return resolve(false);
      client.publish(this.options.topics.node('NDEATH'), Buffer.from(deathPayload(this.currentBdSeq)), { qos: 1, retain: false }, (error) => resolve(!error));
    });
  }
}

function deathPayload(bdSeq: number): Uint8Array {
  return encodePayload({ timestamp: Date.now(), metrics: [bdSeqMetric(bdSeq)] });
}
