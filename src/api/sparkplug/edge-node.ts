import { readFileSync } from 'node:fs';
import { connect, type IClientOptions, type MqttClient } from 'mqtt';
import type { SparkplugConfig, SparkplugServer } from '../../config/types.js';
import type { Device } from '../../devices/device.js';
import type { SlaveUnit } from '../../devices/slave/slave-unit.js';
import type { Logger } from '../../logging/log.js';
import type { OneWireBus } from '../../onewire/bus.js';
import type { ChangeFeed } from '../../registry/feed.js';
import type { Registry } from '../../registry/registry.js';
import { closeClient } from '../mqtt/close-client.js';
import { type ConnectFailureCounts, connectFailureReason, countFailure, describeConnectFailure, isSubscribeRefusal } from '../mqtt/connect-failure.js';
import { BdSeqStore } from './bdseq-store.js';
import { Births } from './births.js';
import { CommandHandler, type CommandStats } from './commands.js';
import { PrimaryHostState } from './host-state.js';
import { bdSeqMetric, uptimeMetric, type NodeProperties } from './node-metrics.js';
import { DEFAULT_DECODE_LIMITS } from './payload-decode.js';
import { encodePayload } from './payload-encode.js';
import type { Metric } from './payload-types.js';
import { engUnitOf, metricValue, PointModel, type Point, type SparkplugDevice } from './point-model.js';
import { QuietLog } from './quiet-log.js';
import { HistoricalReplay } from './replay.js';
import { StoreForward, type BufferedChange } from './store-forward.js';
import { FIRST_RETRY_MS, ServerWalk } from './server-walk.js';
import { SparkplugTopics } from './topics.js';
import { UnconfirmedTail } from './unconfirmed.js';

// iogate as a Sparkplug B edge node: one MQTT session at a time on the first
// server that works, walked in order on loss. The session follows the spec:
// Will = NDEATH with bdSeq (QoS 1, not retained), commands subscribed before
// NBIRTH, STATE gating when a primary host is set, NBIRTH at seq 0 then a
// DBIRTH per online device, DATA by exception, DDEATH/DBIRTH as slaves and
// 1-Wire buses go and come, rebirth on request, NDEATH before a clean stop.
// Changes made while no host hears us are kept (store-and-forward) and sent
// after the next birth as historical DDATA, and so are changes sent on a
// connection that was then lost before the broker confirmed them (a silent
// link: see unconfirmed.ts).
// This file is the session: when to connect, be born, leave and walk on.
// What a birth is lives in births.ts, which STATE counts in host-state.ts,
// the replay of kept changes in replay.ts.

const CONNECT_TIMEOUT_MS = 10_000;
/** How often 1-Wire buses are checked for a lost owserver or newly found sensors. */
const ONE_WIRE_CHECK_MS = 1000;
/** Node uptime is refreshed in NDATA this often. */
const UPTIME_EVERY_MS = 60_000;
/**
 * Rebirths asked for within this time of the last one are folded into one,
 * so a client flooding NCMD Rebirth costs one birth a second, not one each.
 */
const REBIRTH_MIN_GAP_MS = 1000;
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

export interface EdgeNodeOptions {
  config: SparkplugConfig;
  edgeNodeId: string;
  registry: Registry;
  feed: ChangeFeed;
  slaves: readonly SlaveUnit[];
  oneWire: ReadonlyArray<{ bus: OneWireBus }>;
  /** The `automation` devices, as one Sparkplug device `automations`. */
  automations?: readonly Device[];
  stateDir: string;
  properties: NodeProperties;
  log: Logger;
}

export interface EdgeNodeStats {
  /** URL of the server the session is on, or undefined while none. */
  server: string | undefined;
  connected: boolean;
  /** NBIRTH sent on this connection (the node is live). */
  born: boolean;
  /** Waiting for the primary host's online STATE. */
  waitingForHost: boolean;
  bdSeq: number | undefined;
  seq: number;
  nodeBirths: number;
  deviceBirths: number;
  deviceDeaths: number;
  dataMessages: number;
  connects: number;
  commands: CommandStats;
  bufferDepth: number;
  bufferCapacity: number;
  bufferDropped: number;
  replayed: number;
  /** Failed connections (and denied subscriptions) by reason. */
  connectFailures: ConnectFailureCounts;
}

export class EdgeNode {
  readonly topics: SparkplugTopics;
  readonly model: PointModel;
  private readonly bdSeqStore: BdSeqStore;
  private readonly buffer: StoreForward;
  private readonly tail: UnconfirmedTail;
  private readonly commands: CommandHandler;
  private readonly quiet: QuietLog;
  private client: MqttClient | undefined;
  private readonly walk: ServerWalk;
  private retryTimer: NodeJS.Timeout | undefined;
  private bdSeq: number | undefined;
  private born = false;
  private waitingForHost = false;
  private readonly primaryHost: PrimaryHostState;
  private readonly births: Births;
  /** The devices the host was told are born (kept by births.ts). */
  private readonly deviceBorn: ReadonlySet<string>;
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
  private unsubscribe: (() => void) | undefined;
  private oneWireTimer: NodeJS.Timeout | undefined;
  private uptimeTimer: NodeJS.Timeout | undefined;
  private readonly replay: HistoricalReplay;
  private rebirthTimer: NodeJS.Timeout | undefined;
  private lastRebirthAt = -Infinity;
  private readonly startedAt = Date.now();
  private readonly connectFailures: ConnectFailureCounts = {};
  private readonly counts = { nodeBirths: 0, deviceBirths: 0, deviceDeaths: 0, dataMessages: 0, connects: 0, replayed: 0 };
  private outageLogged = false;

  constructor(private readonly options: EdgeNodeOptions) {
    const { config, edgeNodeId, log } = options;
    this.topics = new SparkplugTopics(config.groupId, edgeNodeId);
    this.walk = new ServerWalk(config.servers);
    this.model = new PointModel(options.slaves, options.oneWire.map(({ bus }) => bus), options.automations);
    const key = `${config.groupId}-${edgeNodeId}`;
    this.bdSeqStore = new BdSeqStore(options.stateDir, key);
    if (this.bdSeqStore.warning) log.warn(`Sparkplug: ${this.bdSeqStore.warning}`);
    this.buffer = new StoreForward({
      memoryMb: config.storeForward.memoryMb,
      maxAgeS: config.storeForward.maxAgeS,
      ...(config.storeForward.file ? { stateDir: options.stateDir } : {}),
      edgeNodeKey: key,
      log: (level, message) => (level === 'error' ? log.error(message) : log.warn(message)),
    });
    this.births = new Births(this.topics, this.model, options.properties, this.startedAt, this.counts);
    this.deviceBorn = this.births.bornDevices;
    this.tail = new UnconfirmedTail(this.buffer.capacity);
    this.replay = new HistoricalReplay(this.buffer, this.tail, this.births, this.model, this.topics, this.deviceBorn, this.counts, () => (this.born ? this.client : undefined));
    this.quiet = new QuietLog((message) => log.warn(message));
    this.primaryHost = new PrimaryHostState(this.quiet);
    this.commands = new CommandHandler({
      registry: options.registry,
      feed: options.feed,
      model: this.model,
      write: config.write,
      ...(config.primaryHostId !== undefined ? { hostId: config.primaryHostId } : {}),
      quiet: this.quiet,
      born: () => this.born,
      deviceBorn: (id) => this.deviceBorn.has(id),
      rebirth: () => this.rebirth(),
      nextServer: () => this.leave('the host asked for the next server'),
    });
  }

  start(): void {
    this.unsubscribe = this.options.feed.subscribe((devices) => this.changed(devices), { includeSilent: true });
    // Values as they are now: a change is what differs from these.
    for (const device of this.model.devices) for (const point of device.points) point.sent = metricValue(point);
    if (this.buffer.depth > 0) this.options.log.info(`Sparkplug: ${this.buffer.depth} buffered changes from before the restart wait for the next birth`);
    this.buffer.beginOutage();
    this.oneWireTimer = setInterval(() => this.checkOneWire(), ONE_WIRE_CHECK_MS);
    this.oneWireTimer.unref();
    this.uptimeTimer = setInterval(() => this.publishUptime(), UPTIME_EVERY_MS);
    this.uptimeTimer.unref();
    void this.connectNext();
  }

  stats(): EdgeNodeStats {
    return {
      server: this.client?.connected ? this.walk.current.server.url : undefined,
      connected: this.client?.connected ?? false,
      born: this.born,
      waitingForHost: this.waitingForHost,
      bdSeq: this.bdSeq,
      seq: this.births.upcomingSeq,
      ...this.counts,
      commands: { ...this.commands.stats },
      bufferDepth: this.buffer.depth,
      bufferCapacity: this.buffer.capacity,
      bufferDropped: this.buffer.dropped,
      connectFailures: { ...this.connectFailures },
    };
  }

  /**
   * NDEATH, then disconnect (over MQTT 5 the broker publishes the Will as the
   * NDEATH); the client is closed for good, listeners included, before this
   * resolves, and the buffer file is brought up to date.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    this.unsubscribe?.();
    clearInterval(this.oneWireTimer);
    clearInterval(this.uptimeTimer);
    clearTimeout(this.retryTimer);
    this.replay.cancel();
    clearTimeout(this.rebirthTimer);
    const client = this.client;
    this.client = undefined;
    if (client) await this.disconnect(client, true);
    this.born = false;
    await this.buffer.flush();
  }

  // --- session -------------------------------------------------------------

  private async connectNext(): Promise<void> {
    if (this.stopping) return;
    const { log } = this.options;
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
    this.bdSeq = bdSeq;
    this.sessionBorn = false;
    this.leaving = false;
    this.neverReached = false;
    const client = connect(server.url, this.clientOptions(server, index, bdSeq));
    this.client = client;
    this.tail.watch(client);
    let settled = false;
    client.on('connect', () => {
      settled = true;
      this.counts.connects++;
      log.info(`Sparkplug: connected to ${server.url} as ${this.topics.groupId}/${this.topics.edgeNodeId}, bdSeq ${bdSeq}`);
      void this.session(client);
    });
    client.on('message', (topic, payload, packet) => this.message(client, topic, payload, packet.retain));
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
      this.quiet.note(`server-${index}-${reason}`, `Sparkplug: ${server.url}: ${describeConnectFailure(reason, error)}; trying the next server`);
    });
    client.once('close', () => {
      if (this.client !== client) return;
      this.client = undefined;
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
    const v5 = !this.walk.speaks311(index);
    const options: IClientOptions = {
      clientId: `iogate-${this.topics.groupId}-${this.topics.edgeNodeId}`.slice(0, 64),
      clean: true,
      keepalive: this.options.config.keepaliveS,
      reconnectPeriod: 0,
      connectTimeout: CONNECT_TIMEOUT_MS,
      queueQoSZero: false,
      resubscribe: false,
      protocolVersion: v5 ? 5 : 4,
      will: { topic: this.topics.node('NDEATH'), payload: Buffer.from(this.deathPayload(bdSeq)), qos: 1, retain: false },
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

  private async session(client: MqttClient): Promise<void> {
    const { config, log } = this.options;
    try {
      if (config.primaryHostId !== undefined) {
        this.waitingForHost = true;
        // First of all, so a retained STATE is known before anything is born.
        await client.subscribeAsync(SparkplugTopics.state(config.primaryHostId), { qos: 1 });
      }
      await client.subscribeAsync([this.topics.ncmd, this.topics.dcmdFilter], { qos: 1 });
    } catch (error) {
      // A SUBACK failure code (0x80, or 0x87 "not authorized" in MQTT 5): the broker's ACL denies our topics.
      // Without commands (or the host's STATE) this server is no use: treated as down, like a failed connect.
      const { index, server } = this.walk.current;
      if (isSubscribeRefusal(error as Error)) {
        countFailure(this.connectFailures, 'subscribe_denied');
        this.quiet.note(`server-${index}-subscribe_denied`, `Sparkplug: ${server.url}: ${describeConnectFailure('subscribe_denied', error as Error)}; trying the next server`);
      } else {
        log.warn(`Sparkplug: ${server.url}: cannot subscribe: ${(error as Error).message}; trying the next server`);
      }
      client.end(true);
      return;
    }
    if (this.client !== client) return;
    if (config.primaryHostId === undefined) this.birth(client);
    else if (!this.born) log.info(`Sparkplug: waiting for primary host ${config.primaryHostId} to be online`);
  }

  private lost(url: string, wasConnected: boolean, disconnectCode: number | undefined): void {
    const wasBorn = this.born;
    this.goQuiet();
    // What the broker never confirmed may have died with the link: replayed after the next birth.
    const unconfirmed = this.tail.takeAll();
    for (const change of unconfirmed) this.buffer.push(change);
    if (this.stopping) return;
    const brief = wasConnected && this.sessionBorn && !this.leaving && performance.now() - this.sessionBornAt < BRIEF_SESSION_MS;
    if (brief) {
      const reason = disconnectCode === NOT_AUTHORIZED ? 'publish_denied' : 'dropped_after_birth';
      countFailure(this.connectFailures, reason);
      const after = `the broker ended the session ${Math.round(performance.now() - this.sessionBornAt)} ms after our birth`;
      const code = disconnectCode === undefined ? '' : ` (DISCONNECT reason code 0x${disconnectCode.toString(16)})`;
      this.quiet.note(`server-${this.walk.current.index}-${reason}`, `Sparkplug: ${url}: ${describeConnectFailure(reason, new Error(`${after}${code}`))}; changes are kept; trying the next server`);
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

  /** The session ended (or is about to): no more DATA until the next birth; changes go to the buffer. */
  private goQuiet(): void {
    if (this.born) {
      this.buffer.beginOutage();
      this.outageLogged = false;
    }
    this.born = false;
    this.waitingForHost = false;
    this.births.forget();
    this.replay.cancel();
    clearTimeout(this.rebirthTimer);
    this.rebirthTimer = undefined;
  }

  private scheduleNext(hadSession: boolean): void {
    const delay = this.walk.advance(hadSession);
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => void this.connectNext(), delay);
  }

  /** NDEATH, disconnect, and on to the next server (host offline, or asked to). */
  private leave(reason: string): void {
    const client = this.client;
    if (!client) return;
    this.options.log.info(`Sparkplug: leaving ${this.walk.current.server.url}: ${reason}`);
    this.leaving = true;
    this.goQuiet();
    // The connection's close walks on to the next server (see connectNext).
    void this.disconnect(client, false);
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
      if (acknowledged && this.client === client) this.tail.confirmAll();
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
      if (!client.connected || this.bdSeq === undefined) return resolve(false);
      client.publish(this.topics.node('NDEATH'), Buffer.from(this.deathPayload(this.bdSeq)), { qos: 1, retain: false }, (error) => resolve(!error));
    });
  }

  private deathPayload(bdSeq: number): Uint8Array {
    return encodePayload({ timestamp: Date.now(), metrics: [bdSeqMetric(bdSeq)] });
  }

  private message(client: MqttClient, topic: string, payload: Buffer, retained: boolean): void {
    if (client !== this.client) return;
    const { primaryHostId } = this.options.config;
    if (primaryHostId !== undefined && topic === SparkplugTopics.state(primaryHostId)) return this.hostState(client, payload);
    if (retained) {
      this.quiet.note('retained', `Sparkplug: a retained command on ${topic} was ignored (a command must not be replayed)`);
      return;
    }
    if (topic === this.topics.ncmd) return this.commands.nodeCommand(payload);
    const deviceId = this.topics.dcmdDevice(topic);
    if (deviceId !== undefined) this.commands.deviceCommand(deviceId, payload);
  }

  private hostState(client: MqttClient, payload: Buffer): void {
    const online = this.primaryHost.online(payload);
    if (online === undefined) return;
    if (online) {
      this.waitingForHost = false;
      if (!this.born) this.birth(client);
    } else if (this.born) {
      this.leave(`primary host ${this.options.config.primaryHostId} is offline`);
    } else {
      // Not born here: leaving would only make us walk in circles; the next online STATE births us.
      this.waitingForHost = true;
    }
  }

  // --- births and data -----------------------------------------------------

  private birth(client: MqttClient): void {
    this.births.nodeBirth(client, this.bdSeq ?? 0);
    this.born = true;
    if (!this.sessionBorn) this.sessionBornAt = performance.now();
    this.sessionBorn = true;
    this.waitingForHost = false;
    if (this.buffer.depth > 0) this.replay.schedule();
  }

  private rebirth(): void {
    const client = this.client;
    if (!client?.connected || !this.born) return;
    const wait = this.lastRebirthAt + REBIRTH_MIN_GAP_MS - performance.now();
    if (wait > 0) {
      this.rebirthTimer ??= setTimeout(() => {
        this.rebirthTimer = undefined;
        this.rebirth();
      }, wait);
      return;
    }
    this.lastRebirthAt = performance.now();
    this.birth(client);
  }

  /** The feed's batch: births and deaths of devices, and DDATA (or buffered changes) for changed metrics. */
  private changed(devices: readonly Device[]): void {
    const now = Date.now();
    const client = this.born ? this.client : undefined;
    let perDevice: Map<SparkplugDevice, Metric[]> | undefined;
    let reborn: Set<SparkplugDevice> | undefined;
    for (const device of devices) {
      if (device.type === 'modbus_slave') {
        if (client) this.births.followDevice(client, this.model.device(device.circuit));
        continue;
      }
      const points = this.model.pointsOf(device);
      if (points === undefined) {
        if (device.type === 'sensor') this.checkOneWire();
        continue;
      }
      for (const point of points) {
        // An analog mode change changes the unit the birth declared: the device is born again with it.
        if (client && point.unit !== undefined && this.deviceBorn.has(point.group.id) && engUnitOf(point) !== point.bornUnit) (reborn ??= new Set()).add(point.group);
        const value = metricValue(point);
        if (sameValue(value, point.sent)) continue;
        point.sent = value;
        if (!client) {
          this.keep(point, value, now);
          continue;
        }
        // A device that is not born (offline) says nothing until its DBIRTH carries its values.
        if (!this.deviceBorn.has(point.group.id)) continue;
        this.tail.sent(changeOf(point, value, now));
        perDevice ??= new Map();
        let metrics = perDevice.get(point.group);
        if (!metrics) perDevice.set(point.group, (metrics = []));
        metrics.push({ alias: point.alias, datatype: point.datatype, value, timestamp: now });
      }
    }
    if (!client) return;
    for (const group of reborn ?? []) this.births.reborn(client, group);
    if (!perDevice) return;
    for (const [group, metrics] of perDevice) {
      // A fresh birth carried these values already.
      if (reborn?.has(group)) continue;
      this.births.publish(client, this.topics.device('DDATA', group.id), metrics, now);
      this.counts.dataMessages++;
    }
  }

  private keep(point: Point, value: Point['sent'], now: number): void {
    if (!this.outageLogged) {
      this.outageLogged = true;
      this.options.log.info('Sparkplug: no host hears us; changes are kept for replay after the next birth');
    }
    this.buffer.push(changeOf(point, value, now));
  }

  private checkOneWire(): void {
    const client = this.born ? this.client : undefined;
    for (const bus of this.model.oneWireBuses) {
      const grew = this.model.adoptSensors(bus);
      const device = this.model.device(bus.name);
      if (!device) continue;
      if (grew) {
        for (const point of device.points) if (!('sent' in point)) point.sent = metricValue(point);
        // A DBIRTH declares every metric: new sensors need a fresh one.
        if (client && this.deviceBorn.has(device.id)) this.births.reborn(client, device);
      }
      if (client) this.births.followDevice(client, device);
    }
  }

  private publishUptime(): void {
    const client = this.born ? this.client : undefined;
    if (!client) return;
    const now = Date.now();
    this.births.publish(client, this.topics.node('NDATA'), [uptimeMetric(this.startedAt, now)], now);
    this.counts.dataMessages++;
  }
}

function changeOf(point: Point, value: Point['sent'], timestamp: number): BufferedChange {
  return { device: point.group.id, name: point.name, datatype: point.datatype, value: value ?? null, timestamp };
}

function sameValue(a: unknown, b: unknown): boolean {
  return a === b || (Number.isNaN(a) && Number.isNaN(b));
}
