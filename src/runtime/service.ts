import type { Server as Listener, Socket } from 'node:net';
import { apiGuards } from '../api/access/guards.js';
import { requestsSeen } from '../api/http/admission.js';
import { LISTEN_BACKLOG, createHttpListener, createHttpServer, type HttpContext } from '../api/http/server.js';
import type { MetricsSource } from '../api/http/metrics.js';
import type { MqttBridge } from '../api/mqtt/bridge.js';
import type { EdgeNode } from '../api/sparkplug/edge-node.js';
import type { ModbusServer } from '../api/modbus-server/server.js';
import { builtinPanel, preparePanel } from '../api/panel/serve.js';
import { startWebhook, type Webhook } from '../api/webhook.js';
import { attachWebSocket, type WebSocketEndpoint } from '../api/ws/server.js';
import { readCheckedConfig, type CheckOptions, type CheckedConfig } from './checked-config.js';
import { ConfigError } from '../config/errors.js';
import { automationReferenceProblems } from '../automations/references.js';
import { SETTLE_MS, readWhenStable } from '../config/stable-file.js';
import { startupSummary } from '../config/summary.js';
import type { Config } from '../config/types.js';
import { RequestError } from '../registry/request-error.js';
import type { Logger } from '../logging/log.js';
import { buildRuntime, unitKey, type CoreReloadReport, type ReloadableRuntime } from './runtime.js';
import { ReloadQueue } from './reload-queue.js';
import { SHUTDOWN_BOUND_MS, shutDown } from '../lifecycle/shutdown.js';
import { TrendStore } from '../trends/trend-store.js';
import { VERSION_TEXT } from '../lifecycle/version.js';
import { AuditLog } from '../state/audit-log.js';
import { SessionStore } from '../api/access/sessions.js';
import { LoginThrottle } from '../api/access/login-throttle.js';
import { join } from 'node:path';
import { createTlsFront, tlsFilesStamp, type TlsFront } from '../api/access/tls-front.js';
import { ensureSelfSigned, type SelfSignedFiles } from '../tls/self-signed-store.js';
import { machineNames } from '../tls/machine-names.js';
import { DEFAULT_AUDIT_MAX_MB } from '../config/defaults.js';
import { audit, auditResult, setAuditSink, type Actor } from '../registry/audit-trail.js';

// The running daemon: the runtime (buses, devices, registry) with the APIs on
// top, and what a reload does to each part. A reload re-reads the file through
// the same check as start-up; only a valid configuration is applied, and only
// the parts whose configuration changed are touched. Each part is a component
// that names the slice of the configuration it depends on: an unchanged slice
// is left alone, a changed one is applied in place where the component knows
// how, otherwise that component alone is stopped and started again. A new
// configuration section is wired in by adding a component here.

export interface ServiceOptions {
  /** How the configuration is read again on reload (file, command-line overrides). */
  source: CheckOptions;
  checked: CheckedConfig;
  log: Logger;
  /** Sets the log level and file of a new configuration; called before anything else is applied. */
  applyLogging(config: Config): void;
  /** Writes the start-up summary (stderr and the log file). */
  output(text: string): void;
  traceModbus: boolean;
  /** Given the HTTP server's running request count, sets up what runs after each burst (memory hand-back); optional. */
  afterBursts?(requestsSeen: () => number): void;
}

export interface ReloadReport {
  /** What each component did: kept, updated (in place), restarted, started, stopped. */
  components: Record<string, string>;
  buses: CoreReloadReport;
  /** WebSocket clients closed because their access was revoked. */
  revokedWebSocketClients: number;
  /** The log line's text: what changed. */
  summary: string;
}

export interface Service {
  readonly config: Config;
  readonly runtime: ReloadableRuntime;
  /** Where the HTTP listener is bound now. */
  readonly listening: { address: string; port: number };
  start(): Promise<void>;
  /** Rejects with ConfigError (nothing changed) for an invalid file. */
  /** `actor`: who asked, for the audit log (by default the service manager, `systemctl reload`). */
  reload(actor?: Actor): Promise<ReloadReport>;
  stop(signal: string): Promise<void>;
}

/** A part of the daemon that a reload may leave, update or restart. */
interface Component {
  name: string;
  /** The configuration it depends on; compared as JSON between the old and the new configuration. */
  slice(config: Config): unknown;
  start(config: Config): Promise<void> | void;
  stop(): Promise<void> | void;
  /** Applies a changed slice without a restart; false = cannot, restart me. */
  update?(config: Config): Promise<boolean> | boolean;
}

export function createService(options: ServiceOptions): Service {
  const { log } = options;
  let config = options.checked.config;
  const runtime = buildRuntime(config, options.checked.findModel, log, { traceModbus: options.traceModbus });

  // Read through getters: a reload replaces buses and slaves in the runtime's live arrays. The edge node's figures join once it started.
  const metrics: MetricsSource = {
    get buses() {
      return runtime.buses;
    },
    get slaves() {
      return runtime.slaves;
    },
    get oneWire() {
      return runtime.oneWire;
    },
    get automations() {
      return runtime.automations;
    },
  };
  // It lists the registry's devices on each sample, so devices a reload adds or removes are followed.
  const trends = new TrendStore(runtime.registry);
  // Panel logins outlive reloads (a reload only ends those of changed users) and, through the state file, restarts.
  const sessions = new SessionStore({ path: join(config.stateDir, 'sessions.json'), log: (message) => log.warn(message) });
  // Handed to the HTTP server and the WebSocket endpoint by reference: a reload assigns new guards into it.
  const ctx: HttpContext = {
    registry: runtime.registry,
    feed: runtime.feed,
    version: VERSION_TEXT,
    metrics,
    ...apiGuards(config.apis, sessions),
    login: { authConfig: () => config.apis.auth, sessions, throttle: new LoginThrottle(), log, sessionEnded: () => ws?.recheckAccess('the session was logged out') },
    panel: config.apis.panel.enabled ? servedPanel() : undefined,
    log,
    trends,
    reloadConfig: (actor) =>
      reload(actor).catch((error: unknown) => {
        throw error instanceof ConfigError ? new RequestError(400, 'ConfigError', error.message) : error;
      }),
  };
  // Limits are read by admission and the WebSocket endpoint from this one object.
  const limits = ctx.limits;
  const server = createHttpServer(ctx);
  // The HTTP server itself never listens (the listeners below hand it their
  // connections); its connection tracking, which enforces the header and
  // request timeouts, starts on 'listening'.
  server.emit('listening');
  options.afterBursts?.(() => requestsSeen(server));
  const wsContext = { registry: runtime.registry, feed: runtime.feed, allFiltered: config.apis.websocket.allFiltered };
  let ws: WebSocketEndpoint | undefined;
  let hook: Webhook | undefined;
  let mqtt: MqttBridge | undefined;
  let sparkplug: EdgeNode | undefined;
  let modbusServer: ModbusServer | undefined;
  let auditLog: AuditLog | undefined;
  /** Set while `apis.tls` is configured: the listener hands connections through it. */
  let tlsFront: TlsFront | undefined;
  let tlsApplied: unknown;

  // The listener is a plain TCP server that hands its connections to the HTTP
  // server: a new address can then be bound before the old one is closed,
  // and closing a listener never touches the connections it accepted.
  const connections = new Set<Socket>();
  let listener: Listener | undefined;
  const listening = { address: config.apis.address, port: config.apis.port };

  let acceptWarnedAt = -Infinity;
  const listen = (address: string, port: number): Promise<Listener> =>
    new Promise((resolve, reject) => {
      const next = createHttpListener((socket) => {
        connections.add(socket);
        socket.once('close', () => connections.delete(socket));
        if (tlsFront) tlsFront.accept(socket, (secure) => server.emit('connection', secure));
        else server.emit('connection', socket);
      });
      next.once('error', reject);
      // A deep accept queue: a connection storm waits there instead of being refused (see docs/security.md).
      next.listen({ port, host: address, backlog: LISTEN_BACKLOG }, () => {
        next.off('error', reject);
        // Once listening, only accept() fails here (out of descriptors, say):
        // that connection is lost, the listener stays open and serves on.
        next.on('error', (error) => {
          const now = performance.now();
          const message = `HTTP server: a connection could not be accepted: ${error.message}`;
          if (now - acceptWarnedAt >= 60_000) {
            acceptWarnedAt = now;
            log.warn(`${message} (further ones within a minute are logged at DEBUG)`);
          } else log.debug(message);
        });
        resolve(next);
      });
    });

  // A self-signed certificate follows the machine's names: a reload after an address was added makes a new one.
  const tlsSlice = (c: Config) => [tlsFilesStamp(c.apis.tls), c.apis.tls?.selfSigned ? machineNames() : undefined];
  const makeSelfSignedIfNeeded = async (files: SelfSignedFiles) => {
    const { madeBecause } = await ensureSelfSigned(files, machineNames());
    if (madeBecause === undefined) return;
    const first = madeBecause === 'none was stored yet';
    log.warn(`HTTPS: made a new self-signed certificate (${madeBecause})${first ? '' : '; clients that trusted the old one must be given the new one'}`);
  };

  const components: Component[] = [
    {
      // Before the listener starts, so no connection is ever served in the clear by mistake.
      name: 'tls',
      // The running configuration's files as they were when loaded, against the files now: a renewed certificate at the same path is a change.
      slice: (c) => (c === config ? tlsApplied : tlsSlice(c)),
      async start(c) {
        if (c.apis.tls?.selfSigned) await makeSelfSignedIfNeeded(c.apis.tls);
        tlsApplied = tlsSlice(c);
        if (c.apis.tls === undefined) return;
        // Throws for files that do not hold a matching key and certificate: start-up fails, a reload is refused.
        tlsFront = createTlsFront(c.apis.tls, log, limits);
        log.info(`HTTPS: ${c.apis.tls.selfSigned ? 'self-signed ' : ''}certificate ${c.apis.tls.cert}, SHA-256 fingerprint ${tlsFront.fingerprint}`);
      },
      stop() {
        tlsFront = undefined;
      },
      async update(c) {
        if (c.apis.tls === undefined || tlsFront === undefined) return false;
        if (c.apis.tls.selfSigned) await makeSelfSignedIfNeeded(c.apis.tls);
        tlsFront.renew(c.apis.tls);
        tlsApplied = tlsSlice(c);
        log.warn(`reload: HTTPS certificate renewed from ${c.apis.tls.cert}, SHA-256 fingerprint ${tlsFront.fingerprint}`);
        return true;
      },
    },
    {
      // First, so writes and refusals from the very first request are kept.
      name: 'audit',
      slice: (c) => [c.audit, c.stateDir],
      async start(c) {
        const maxBytes = c.audit?.maxBytes ?? DEFAULT_AUDIT_MAX_MB * 1024 * 1024;
        if (maxBytes === 0) return;
        try {
          auditLog = await AuditLog.open({ dir: c.stateDir, maxBytes, log });
        } catch (error) {
          log.error(`audit log: not kept: ${(error as Error).message}`);
          return;
        }
        setAuditSink(auditLog.record);
        ctx.auditLog = auditLog;
      },
      async stop() {
        setAuditSink(undefined);
        ctx.auditLog = undefined;
        await auditLog?.close();
        auditLog = undefined;
      },
    },
    {
      name: 'logging',
      slice: (c) => c.logging,
      start: () => undefined,
      stop: () => undefined,
      // Applied before every other component (see reload), so their lines go to the new file.
      update: () => true,
    },
    {
      name: 'access',
      slice: (c) => [c.apis.auth, c.apis.allowedHosts, c.apis.limits],
      start: () => undefined,
      stop: () => undefined,
      update(next) {
        const [was, now] = [anonymousWriters(config.apis.auth), anonymousWriters(next.apis.auth)];
        // Deliberate or not (a file edited by mistake), this must not pass unnoticed.
        if (ANONYMOUS_REACH.indexOf(now) > ANONYMOUS_REACH.indexOf(was)) log.warn(`reload: requests without a token may now read and write: ${now} (before: ${was})`);
        const fresh = apiGuards(next.apis, sessions);
        for (const name of sessions.endChangedUsers(next.apis.auth.users)) {
          log.warn(`reload: user '${name}' was removed or their password or scope changed: their panel sessions ended`);
          audit({ who: name, from: '', interface: 'config' }, 'auth/sessions', {}, 'ended: user removed or changed');
        }
        if (fresh.limits.maxConnections !== limits.maxConnections || fresh.limits.maxConnectionsPerAddress !== limits.maxConnectionsPerAddress) {
          log.warn('reload: apis.limits.max_connections and max_connections_per_address take effect at the next restart');
        }
        Object.assign(limits, fresh.limits);
        server.headersTimeout = limits.headersTimeoutMs;
        server.requestTimeout = limits.requestTimeoutMs;
        ctx.auth = fresh.auth;
        ctx.cors = fresh.cors;
        ctx.host = fresh.host;
        return true;
      },
    },
    {
      name: 'panel',
      slice: (c) => c.apis.panel,
      start: () => undefined,
      stop: () => undefined,
      update(next) {
        ctx.panel = next.apis.panel.enabled ? servedPanel() : undefined;
        return true;
      },
    },
    {
      name: 'websocket',
      slice: (c) => c.apis.websocket,
      start(next) {
        if (!next.apis.websocket.enabled) return;
        wsContext.allFiltered = next.apis.websocket.allFiltered;
        ws = attachWebSocket(server, wsContext, ctx, log, { errorReplies: next.apis.websocket.errorReplies });
      },
      async stop() {
        await ws?.close();
        ws = undefined;
      },
      update(next) {
        // Switched on or off: start or close it (the latter says goodbye to the clients).
        if (next.apis.websocket.enabled !== (ws !== undefined)) return false;
        // error_replies and the clients' access are settled after every component (see applyReload).
        wsContext.allFiltered = next.apis.websocket.allFiltered;
        return true;
      },
    },
    {
      name: 'webhook',
      slice: (c) => c.apis.webhook,
      start(next) {
        hook = next.apis.webhook.enabled ? startWebhook(next.apis.webhook, runtime.feed, log) : undefined;
        ctx.webhook = hook?.stats;
      },
      async stop() {
        await hook?.stop();
        hook = undefined;
        ctx.webhook = undefined;
      },
    },
    {
      name: 'mqtt',
      slice: (c) => c.apis.mqtt,
      async start(next) {
        if (next.apis.mqtt.enabled) mqtt = await startMqttSafely(next);
        const bridge = mqtt;
        if (bridge) metrics.mqtt = () => bridge.stats();
      },
      async stop() {
        await mqtt?.stop();
        mqtt = undefined;
        metrics.mqtt = undefined;
      },
    },
    {
      name: 'sparkplug',
      slice: (c) => c.apis.sparkplug,
      async start(next) {
        if (next.apis.sparkplug.enabled) sparkplug = await startSparkplugSafely(next);
      },
      async stop() {
        // A clean stop: NDEATH, so the host marks the metrics stale at once.
        await sparkplug?.stop();
        sparkplug = undefined;
        metrics.sparkplug = undefined;
      },
    },
    {
      name: 'modbus_server',
      slice: (c) => c.apis.modbusServer,
      async start(next) {
        if (!next.apis.modbusServer.enabled) return;
        const { startModbusServer } = await import('../api/modbus-server/server.js');
        const started = await startModbusServer(next.apis.modbusServer, runtime, log);
        modbusServer = started;
        metrics.modbusServer = () => ({ stats: started.stats, connections: started.connections });
      },
      async stop() {
        await modbusServer?.stop();
        modbusServer = undefined;
        metrics.modbusServer = undefined;
      },
    },
    // Last at start-up: clients come once everything that serves them is in place.
    {
      name: 'listener',
      slice: (c) => [c.apis.address, c.apis.port],
      async start(next) {
        listener = await listen(next.apis.address, next.apis.port);
        const bound = listener.address();
        Object.assign(listening, { address: next.apis.address, port: typeof bound === 'object' && bound ? bound.port : next.apis.port });
      },
      stop: () => new Promise<void>((resolve) => (listener ? listener.close(() => resolve()) : resolve())),
      async update(next) {
        // The new one first: if it cannot be bound, the old one still serves and the reload fails.
        const fresh = await listen(next.apis.address, next.apis.port);
        const old = listener;
        listener = fresh;
        const bound = fresh.address();
        Object.assign(listening, { address: next.apis.address, port: typeof bound === 'object' && bound ? bound.port : next.apis.port });
        old?.close();
        log.info(`listening on http://${next.apis.address}:${listening.port}`);
        return true;
      },
    },
  ];

  /** MQTT is loaded only when enabled, so otherwise no client library is loaded and nothing connects. */
  async function startMqttSafely(next: Config): Promise<MqttBridge | undefined> {
    try {
      const { startMqtt } = await import('../api/mqtt/bridge.js');
      return startMqtt({ ...runtime, config: next.apis.mqtt, log });
    } catch (error) {
      // The other APIs serve on: a broken MQTT setup (e.g. an unreadable TLS file) must not stop the controller.
      log.error(`MQTT: not started: ${(error as Error).message}`);
      return undefined;
    }
  }

  /** Like MQTT: loaded only when enabled, and a broken setup leaves the other APIs serving. */
  async function startSparkplugSafely(next: Config): Promise<EdgeNode | undefined> {
    try {
      const { startSparkplug } = await import('../api/sparkplug/start.js');
      const node = startSparkplug(next, runtime, log);
      metrics.sparkplug = () => node.stats();
      return node;
    } catch (error) {
      log.error(`Sparkplug: not started: ${(error as Error).message}`);
      return undefined;
    }
  }

  // One reload at a time, and those asked for meanwhile share the next (see reload-queue.ts).
  const reloads = new ReloadQueue(applyReload);
  function reload(actor: Actor = SERVICE_MANAGER): Promise<ReloadReport> {
    const run = reloads.request();
    // Each caller's own entry: two reloads asked for at once are two entries with one outcome.
    run.then(
      (report) => audit(actor, 'config', {}, `ok: ${report.summary}`),
      (error: unknown) => audit(actor, 'config', {}, auditResult(error)),
    );
    return run;
  }

  /** The configuration file once nothing writes to it any more (see stable-file.ts); a file still written is refused. */
  function readSettledConfig(): Promise<CheckedConfig> {
    const { file } = options.source;
    if (file === undefined) return Promise.resolve(readCheckedConfig(options.source));
    return readWhenStable(file, () => readCheckedConfig(options.source), {
      onWait: (age) => log.info(`reload: ${file} was modified ${Math.max(0, Math.round(age))} ms ago; waiting until it has not changed for ${SETTLE_MS / 1000} s`),
    });
  }

  async function applyReload(): Promise<ReloadReport> {
    let checked: CheckedConfig;
    try {
      checked = await readSettledConfig();
    } catch (error) {
      if (error instanceof ConfigError) log.error(`reload refused, still serving the previous configuration: ${error.message}`);
      throw error;
    }
    const previous = config;
    const next = checked.config;
    const automationProblems = automationReferenceProblems(next, checked.findModel);
    if (automationProblems.length > 0) {
      const error = new ConfigError(automationProblems);
      log.error(`reload refused, still serving the previous configuration: ${error.message}`);
      throw error;
    }
    const refusal = outputControlReloadProblem(previous, next);
    if (refusal !== undefined) {
      log.error(`reload refused, still serving the previous configuration: ${refusal}`);
      throw new ConfigError([refusal], 'Reload refused');
    }
    for (const warning of checked.warnings) log.warn(warning);
    options.applyLogging(next);
    const report: ReloadReport = { components: {}, buses: { kept: [], restarted: [], started: [], stopped: [] }, revokedWebSocketClients: 0, summary: '' };
    // The listener first: if the new address cannot be bound, the reload fails before anything changed.
    const order = [...components.filter((c) => c.name === 'listener'), ...components.filter((c) => c.name !== 'listener')];
    for (const component of order) {
      if (JSON.stringify(component.slice(previous)) === JSON.stringify(component.slice(next))) {
        report.components[component.name] = 'kept';
        continue;
      }
      if (component.update && (await component.update(next))) {
        report.components[component.name] = 'updated';
        continue;
      }
      await component.stop();
      await component.start(next);
      report.components[component.name] = 'restarted';
    }
    report.revokedWebSocketClients = ws?.settingsChanged({ errorReplies: next.apis.websocket.errorReplies }) ?? 0;
    report.buses = await runtime.reload(next, checked.findModel, { traceModbus: options.traceModbus });
    // The MQTT bridge indexes the slaves and their devices when it starts (availability, discovery):
    // after a bus was rebuilt, added or removed it starts again, so the broker sees the new set.
    // Automations are devices too (a changed one is a new device): the births list them.
    const automationsChanged = unitKey(previous.automations) !== unitKey(next.automations);
    const busesChanged = report.buses.restarted.length + report.buses.started.length + report.buses.stopped.length > 0 || automationsChanged;
    // So does the Sparkplug edge node: its births list the devices.
    for (const [name, running] of [['mqtt', mqtt], ['sparkplug', sparkplug]] as const) {
      const component = components.find((candidate) => candidate.name === name)!;
      if (busesChanged && running !== undefined && report.components[name] === 'kept') {
        await component.stop();
        await component.start(next);
        report.components[name] = 'restarted (the buses changed)';
      }
    }
    config = next;
    const changed = Object.entries(report.components).filter(([, what]) => what !== 'kept').map(([name, what]) => `${name} ${what}`);
    const buses = [
      ...report.buses.restarted.map((name) => `${name} restarted`),
      ...report.buses.started.map((name) => `${name} started`),
      ...report.buses.stopped.map((name) => `${name} stopped`),
    ];
    report.summary =
      `configuration reloaded from ${next.file ?? 'the built-in configuration'}: ${[...changed, ...buses].join(', ') || 'nothing changed'}` +
      `${report.buses.kept.length > 0 ? `; buses kept polling: ${report.buses.kept.join(', ')}` : ''}` +
      `${report.revokedWebSocketClients > 0 ? `; ${report.revokedWebSocketClients} WebSocket client(s) closed, their access was revoked` : ''}`;
    // At WARNING, like the refusals: EVOK's configurations log at WARNING, and a reload's outcome must show there.
    log.warn(report.summary);
    return report;
  }

  return {
    get config() {
      return config;
    },
    runtime,
    listening,
    start() {
      const run = (async () => {
        await runtime.start();
        trends.start();
        for (const component of components) await component.start(config);
        // The boards read before the webhook and WebSocket started: their first state goes out now, once.
        runtime.feed.releaseFirstStates();
        options.output(startupSummary({ ...config, apis: { ...config.apis, port: listening.port } }));
        // A parent process (tests, supervisors) can wait for this line instead of polling.
        log.info(`listening on ${tlsFront ? 'https' : 'http'}://${config.apis.address}:${listening.port}`);
      })();
      // A SIGHUP during start-up waits for it.
      reloads.waitFor(run);
      return run;
    },
    reload,
    async stop(signal) {
      log.info(`${signal}: shutting down`);
      const steps = [
        { name: 'trends', run: () => trends.stop() },
        { name: 'WebSocket clients', run: () => ws?.close() },
        { name: 'webhook', run: () => hook?.stop() },
        { name: 'MQTT', run: () => mqtt?.stop() },
        { name: 'Modbus TCP server', run: () => modbusServer?.stop() },
        // NDEATH before the buses stop, so the host marks our metrics stale at once.
        { name: 'Sparkplug', run: () => sparkplug?.stop() },
        // Stops the buses and flushes aliases changed by the writes above.
        { name: 'buses and devices', run: () => runtime.stop() },
        // Written shortly after each change anyway; this saves the last second's logins and logouts.
        { name: 'panel sessions', run: () => sessions.flush() },
        // Last: the writes drained above are in it.
        { name: 'audit log', run: () => components.find((component) => component.name === 'audit')!.stop() },
      ];
      const stopAccepting = new Promise<void>((resolve) => (listener ? listener.close(() => resolve()) : resolve()));
      await shutDown({ server, stopAccepting, connections }, steps, log, SHUTDOWN_BOUND_MS);
    },
  };
}

/** A reload asked for by a signal (`systemctl reload`, SIGHUP): whoever may signal the daemon. */
const SERVICE_MANAGER: Actor = { who: 'service manager', from: '', interface: 'signal' };

/** Who may read and write without a token, from the fewest to the most. */
const ANONYMOUS_REACH = ['nobody', 'loopback clients', 'every client that reaches the listener'] as const;

function anonymousWriters(auth: Config['apis']['auth']): (typeof ANONYMOUS_REACH)[number] {
  if ((auth.tokens.length === 0 && auth.users.length === 0) || auth.allowAnonymous) return ANONYMOUS_REACH[2];
  return auth.loopbackAnonymous ? ANONYMOUS_REACH[1] : ANONYMOUS_REACH[0];
}

/** The panel page, ready to send; none when running from unbundled sources. */
function servedPanel() {
  const page = builtinPanel();
  return page === undefined ? undefined : preparePanel(page);
}

/**
 * Interlocks and covers hold the output devices they were bound to at start:
 * a reload that changed them, or rebuilt a bus under them, would leave a
 * group guarding devices that no longer exist. Safety first: such a reload is
 * refused as a whole (nothing changes), and a restart applies it.
 */
function outputControlReloadProblem(previous: Config, next: Config): string | undefined {
  const guarded = (config: Config) => config.interlocks.length > 0 || config.covers.length > 0;
  if (!guarded(previous) && !guarded(next)) return undefined;
  const same = (pick: (config: Config) => unknown) => unitKey(pick(previous)) === unitKey(pick(next));
  if (same((c) => [c.interlocks, c.covers]) && same((c) => [c.buses, c.oneWireBuses])) return undefined;
  return 'with interlocks or covers configured, a change to them or to the buses takes a restart (systemctl restart iogate); API settings reload in place';
}
