import type { MqttClient } from 'mqtt';
import type { SparkplugConfig } from '../../config/types.js';
import type { Device } from '../../devices/device.js';
import type { SlaveUnit } from '../../devices/slave/slave-unit.js';
import type { Logger } from '../../logging/log.js';
import type { OneWireBus } from '../../onewire/bus.js';
import type { ChangeFeed } from '../../registry/feed.js';
import type { Registry } from '../../registry/registry.js';
import type { ConnectFailureCounts } from '../mqtt/connect-failure.js';
import { Births } from './births.js';
import { CommandHandler, type CommandStats } from './commands.js';
import { DataPublisher } from './data-publisher.js';
import { PrimaryHostState } from './host-state.js';
import type { NodeProperties } from './node-metrics.js';
import { PointModel } from './point-model.js';
import { QuietLog } from './quiet-log.js';
import { HistoricalReplay } from './replay.js';
import { MqttSession } from './session.js';
import { StoreForward } from './store-forward.js';
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
// This file is the node: what it is made of, when it is born, what it does
// with a message and when it goes quiet. The MQTT session (connect, subscribe,
// the walk over servers, the NDEATH) lives in session.ts, the DATA published
// from the change feed in data-publisher.ts, what a birth is in births.ts,
// which STATE counts in host-state.ts, the replay of kept changes in replay.ts.

/**
 * Rebirths asked for within this time of the last one are folded into one,
 * so a client flooding NCMD Rebirth costs one birth a second, not one each.
 */
const REBIRTH_MIN_GAP_MS = 1000;

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
  private readonly buffer: StoreForward;
  private readonly tail: UnconfirmedTail;
  private readonly commands: CommandHandler;
  private readonly quiet: QuietLog;
  private readonly session: MqttSession;
  private readonly data: DataPublisher;
  private born = false;
  private waitingForHost = false;
  private readonly primaryHost: PrimaryHostState;
  private readonly births: Births;
  /** The devices the host was told are born (kept by births.ts). */
  private readonly deviceBorn: ReadonlySet<string>;
  private readonly replay: HistoricalReplay;
  private rebirthTimer: NodeJS.Timeout | undefined;
  private lastRebirthAt = -Infinity;
  private readonly startedAt = Date.now();
  private readonly counts = { nodeBirths: 0, deviceBirths: 0, deviceDeaths: 0, dataMessages: 0, connects: 0, replayed: 0 };

  constructor(private readonly options: EdgeNodeOptions) {
    const { config, edgeNodeId, log } = options;
    this.topics = new SparkplugTopics(config.groupId, edgeNodeId);
    this.model = new PointModel(options.slaves, options.oneWire.map(({ bus }) => bus), options.automations);
    this.buffer = new StoreForward({
      memoryMb: config.storeForward.memoryMb,
      maxAgeS: config.storeForward.maxAgeS,
      ...(config.storeForward.file ? { stateDir: options.stateDir } : {}),
      edgeNodeKey: `${config.groupId}-${edgeNodeId}`,
      log: (level, message) => (level === 'error' ? log.error(message) : log.warn(message)),
    });
    this.births = new Births(this.topics, this.model, options.properties, this.startedAt, this.counts);
    this.deviceBorn = this.births.bornDevices;
    this.tail = new UnconfirmedTail(this.buffer.capacity);
    this.quiet = new QuietLog((message) => log.warn(message));
    this.session = new MqttSession({
      config,
      topics: this.topics,
      stateDir: options.stateDir,
      tail: this.tail,
      buffer: this.buffer,
      quiet: this.quiet,
      counts: this.counts,
      log,
      events: {
        connected: () => {
          if (config.primaryHostId !== undefined) this.waitingForHost = true;
        },
        subscribed: (client) => this.subscribed(client),
        message: (client, topic, payload, retained) => this.message(client, topic, payload, retained),
        born: () => this.born,
        quiet: () => this.goQuiet(),
      },
    });
    const bornClient = () => (this.born ? this.session.client : undefined);
    this.replay = new HistoricalReplay(this.buffer, this.tail, this.births, this.model, this.topics, this.deviceBorn, this.counts, bornClient);
    this.data = new DataPublisher({
      feed: options.feed,
      model: this.model,
      births: this.births,
      topics: this.topics,
      buffer: this.buffer,
      tail: this.tail,
      counts: this.counts,
      startedAt: this.startedAt,
      log,
      bornClient,
    });
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
      nextServer: () => this.session.leave('the host asked for the next server'),
    });
  }

  start(): void {
    this.data.start();
    if (this.buffer.depth > 0) this.options.log.info(`Sparkplug: ${this.buffer.depth} buffered changes from before the restart wait for the next birth`);
    this.data.beginOutage();
    this.session.start();
  }

  stats(): EdgeNodeStats {
    return {
      server: this.session.server,
      connected: this.session.client?.connected ?? false,
      born: this.born,
      waitingForHost: this.waitingForHost,
      bdSeq: this.session.bdSeq,
      seq: this.births.upcomingSeq,
      ...this.counts,
      commands: { ...this.commands.stats },
      bufferDepth: this.buffer.depth,
      bufferCapacity: this.buffer.capacity,
      bufferDropped: this.buffer.dropped,
      connectFailures: { ...this.session.connectFailures },
    };
  }

  /**
   * NDEATH, then disconnect (over MQTT 5 the broker publishes the Will as the
   * NDEATH); the client is closed for good, listeners included, before this
   * resolves, and the buffer file is brought up to date.
   */
  async stop(): Promise<void> {
    this.data.stop();
    this.replay.cancel();
    clearTimeout(this.rebirthTimer);
    await this.session.stop();
    this.born = false;
    await this.buffer.flush();
  }

  /** Subscribed on a new connection: born now, or once the primary host says it is online. */
  private subscribed(client: MqttClient): void {
    const { config, log } = this.options;
    if (config.primaryHostId === undefined) this.birth(client);
    else if (!this.born) log.info(`Sparkplug: waiting for primary host ${config.primaryHostId} to be online`);
  }

  /** The session ended (or is about to): no more DATA until the next birth; changes go to the buffer. */
  private goQuiet(): void {
    if (this.born) this.data.beginOutage();
    this.born = false;
    this.waitingForHost = false;
    this.births.forget();
    this.replay.cancel();
    clearTimeout(this.rebirthTimer);
    this.rebirthTimer = undefined;
  }

  private message(client: MqttClient, topic: string, payload: Buffer, retained: boolean): void {
    if (client !== this.session.client) return;
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
      this.session.leave(`primary host ${this.options.config.primaryHostId} is offline`);
    } else {
      // Not born here: leaving would only make us walk in circles; the next online STATE births us.
      this.waitingForHost = true;
    }
  }

  private birth(client: MqttClient): void {
    this.births.nodeBirth(client, this.session.bdSeq ?? 0);
    this.born = true;
    this.session.birthSent();
    this.waitingForHost = false;
    if (this.buffer.depth > 0) this.replay.schedule();
  }

  private rebirth(): void {
    const client = this.session.client;
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
}
