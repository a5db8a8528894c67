import { parseArgs } from 'node:util';
import { bindPolicyProblem } from './api/access/bind-policy.js';
import { apiGuards } from './api/access/guards.js';
import { LISTEN_BACKLOG, createHttpServer } from './api/http/server.js';
import { loadMallocTrim } from './memory/malloc-trim.js';
import { collectAfterBursts, exposedGc } from './memory/quiet-gc.js';
import { builtinPanel, preparePanel } from './api/panel/serve.js';
import type { MqttBridge } from './api/mqtt/bridge.js';
import { startWebhook } from './api/webhook.js';
import { attachWebSocket } from './api/ws/server.js';
import type { BoardModel } from './boards/model.js';
import { loadHwDefinitionDir } from './boards/hwdef.js';
import { findModel, unknownModelProblems } from './boards/resolve.js';
import { ConfigError } from './config/errors.js';
import { loadConfig } from './config/load.js';
import { startupSummary } from './config/summary.js';
import { EXIT_CONFIG, EXIT_TEMPORARY, EXIT_USAGE } from './exit-codes.js';
import { createLogger, type LogLevel } from './log.js';
import { openLogFile, type LogFile } from './log-file.js';
import { buildRuntime } from './runtime.js';
import { SHUTDOWN_BOUND_MS, shutDown } from './shutdown.js';
import { startStatsLine } from './stats-line.js';
import { TrendStore } from './trends/trend-store.js';
import { VERSION, VERSION_TEXT } from './version.js';

// Command-line entry of the daemon.

const USAGE = `iogate ${VERSION} — EVOK-compatible API daemon for Unipi PLCs

Usage: iogate [--config FILE] [--port N] [--address A] [--hw-dir DIR] [--autogen FILE] [--debug]

  -c, --config FILE   EVOK config.yaml to read (default: built-in simulated Neuron, no hardware)
  -p, --port N        HTTP/WebSocket port (overrides apis.port; default 8080)
  -a, --address A     address to listen on (overrides apis.address; default 127.0.0.1)
      --hw-dir DIR    extra directory of hw-definition YAML files (EVOK v3 format)
      --autogen FILE  autogen file read when the config says autogen: true (default /etc/evok/autogen.yaml)
  -d, --debug         log at DEBUG level
  -v, --version       print the version and exit
  -h, --help          print this help and exit

Exit status: 0 stopped by SIGTERM/SIGINT, 2 bad command line, 78 configuration
error (not worth restarting), 75 the HTTP port is in use (try again later).

Environment:
  IOGATE_STATS_MS=N   every N ms write a 'stats {...}' JSON line of counters
                      (Modbus requests, simulator reads, scans, overruns) to stderr
`;

function main(): void {
  let args;
  try {
    args = parseArgs({
      options: {
        config: { type: 'string', short: 'c' },
        port: { type: 'string', short: 'p' },
        address: { type: 'string', short: 'a' },
        'hw-dir': { type: 'string' },
        autogen: { type: 'string' },
        debug: { type: 'boolean', short: 'd' },
        version: { type: 'boolean', short: 'v' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    }).values;
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n\n${USAGE}`);
    process.exit(EXIT_USAGE);
  }
  if (args.help) {
    process.stdout.write(USAGE);
    return;
  }
  if (args.version) {
    process.stdout.write(`${VERSION_TEXT}\n`);
    return;
  }
  const port = args.port === undefined ? undefined : Number(args.port);
  if (port !== undefined && !(Number.isInteger(port) && port >= 0 && port <= 65535)) {
    process.stderr.write(`--port: '${args.port}' is not a port number (0..65535)\n`);
    process.exit(EXIT_USAGE);
  }

  let loaded;
  const userModels = new Map<string, BoardModel>();
  try {
    loaded = loadConfig({
      file: args.config,
      autogenFile: args.autogen,
      overrides: { port, address: args.address, hwDir: args['hw-dir'] },
      // Board models are checked with the file, so every problem shows in one run.
      check: (config) => {
        const warnings: string[] = [];
        for (const dir of config.hwDefinitionDirs) {
          const found = loadHwDefinitionDir(dir);
          for (const [name, model] of found.models) userModels.set(name, model);
          warnings.push(...found.warnings);
        }
        const problems = config.buses
          .flatMap((bus) => bus.devices)
          .flatMap((device) => unknownModelProblems([device], userModels).map((text) => ({ at: device.modelOrigin, text })));
        return { problems, warnings };
      },
    });
  } catch (error) {
    const message = error instanceof ConfigError ? error.message : (error as Error).message;
    process.stderr.write(`iogate: cannot start: ${message}\n`);
    process.exit(EXIT_CONFIG);
  }
  const { config, warnings } = loaded;
  const unsafeBind = bindPolicyProblem(config.apis);
  if (unsafeBind !== undefined) {
    process.stderr.write(`iogate: cannot start: ${unsafeBind}\n`);
    process.exit(EXIT_CONFIG);
  }
  const level: LogLevel = args.debug ? 'DEBUG' : config.logging.level;
  const logFile = openConfiguredLogFile(config.logging.file);
  const output = (line: string) => {
    process.stderr.write(line);
    logFile?.write(line);
  };
  const log = createLogger(level, output);
  for (const warning of warnings) log.warn(warning);

  const runtime = buildRuntime(config, (name) => findModel(name, userModels), log);
  const guards = apiGuards(config.apis);
  const { websocket, webhook } = config.apis;
  const hook = webhook.enabled ? startWebhook(webhook, runtime.feed, log) : undefined;
  const trends = new TrendStore(runtime.registry);
  const server = createHttpServer({
    registry: runtime.registry,
    feed: runtime.feed,
    version: VERSION_TEXT,
    metrics: runtime,
    webhook: hook?.stats,
    panel: config.apis.panel.enabled ? servedPanel() : undefined,
    trends,
    ...guards,
  });
  const ws = websocket.enabled
    ? attachWebSocket(server, { registry: runtime.registry, feed: runtime.feed, allFiltered: websocket.allFiltered }, guards, log, {
        errorReplies: websocket.errorReplies,
      })
    : undefined;
  server.on('error', (error: NodeJS.ErrnoException) => {
    const where = `${config.apis.address}:${config.apis.port}`;
    if (error.code === 'EADDRINUSE') {
      // Usually EVOK (or a second iogate) still running: worth another try later, not a tight loop.
      log.error(`cannot listen on ${where}: the port is in use by another program (EVOK? check: ss -ltnp 'sport = ${config.apis.port}')`);
      process.exit(EXIT_TEMPORARY);
    }
    if (error.code === 'EADDRNOTAVAIL' || error.code === 'EACCES') {
      log.error(`cannot listen on ${where}: ${error.message} (check apis.address and apis.port)`);
      process.exit(EXIT_CONFIG);
    }
    log.error(`HTTP server: ${error.message}`);
    process.exit(1);
  });
  collectAfterBursts(server, mallocTrimAfterCollections());
  const statsMs = Number(process.env['IOGATE_STATS_MS'] ?? 0);
  if (statsMs > 0) startStatsLine(runtime, statsMs, (line) => process.stderr.write(line));
  let mqtt: MqttBridge | undefined;
  void runtime.start().then(async () => {
    trends.start();
    if (config.apis.mqtt.enabled) mqtt = await startMqttSafely();
    server.listen({ port: config.apis.port, host: config.apis.address, backlog: LISTEN_BACKLOG }, () => {
      const address = server.address();
      const actualPort = typeof address === 'object' && address ? address.port : config.apis.port;
      // The level in force (--debug wins) and the file only if it is really written.
      const logging = logFile ? { level, file: config.logging.file } : { level };
      output(startupSummary({ ...config, logging, apis: { ...config.apis, port: actualPort } }) + '\n');
      // A parent process (tests, supervisors) can wait for this line instead of polling.
      log.info(`listening on http://${config.apis.address}:${actualPort}`);
    });
  });

  /** The malloc_trim addon, loaded only when the daemon collects after bursts (node --expose-gc). */
  function mallocTrimAfterCollections(): (() => void) | undefined {
    if (!exposedGc()) return undefined;
    // In the bundle, __dirname is the bundle's directory, where build.mjs and the package put native/.
    const load = loadMallocTrim(typeof __dirname === 'string' ? __dirname : undefined);
    if ('trim' in load) {
      log.debug('memory: the C heap is trimmed after each burst of requests (malloc_trim)');
      return load.trim;
    }
    if ('failed' in load) log.warn(`memory: the malloc_trim addon cannot be used, so the C heap a burst of requests frees is kept: ${load.failed}`);
    else log.debug(`memory: no malloc_trim addon (${load.absent})`);
    return undefined;
  }

  /** MQTT is loaded only when enabled, so otherwise no client library is loaded and nothing connects. */
  async function startMqttSafely(): Promise<MqttBridge | undefined> {
    try {
      const { startMqtt } = await import('./api/mqtt/bridge.js');
      return startMqtt({ ...runtime, config: config.apis.mqtt, log });
    } catch (error) {
      // The other APIs serve on: a broken MQTT setup (e.g. an unreadable TLS file) must not stop the controller.
      log.error(`MQTT: not started: ${(error as Error).message}`);
      return undefined;
    }
  }

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info(`${signal}: shutting down`);
    // Backstop in case a step ignores its bound; a little later than the bound so the steps normally finish first.
    setTimeout(() => process.exit(0), SHUTDOWN_BOUND_MS + 500).unref();
    const steps = [
      { name: 'WebSocket clients', run: () => ws?.close() },
      { name: 'webhook', run: () => hook?.stop() },
      { name: 'MQTT', run: () => mqtt?.stop() },
      // Last: stops the buses and flushes aliases changed by the writes above.
      { name: 'buses and devices', run: () => runtime.stop() },
    ];
    void shutDown(server, steps, log).finally(() => {
      logFile?.close();
      process.exit(0);
    });
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

/**
 * EVOK's `logging.file`, written beside stderr. A file that cannot be opened
 * (a migrated EVOK path on a read-only system, a missing directory) is not
 * worth refusing to start over: one warning, and the journal keeps every line.
 */
function openConfiguredLogFile(file: string | undefined): LogFile | undefined {
  if (file === undefined) return undefined;
  try {
    return openLogFile(file);
  } catch (error) {
    process.stderr.write(`WARNING logging.file ${file}: cannot write it (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); logging to stderr only\n`);
    return undefined;
  }
}

main();

/** The panel page, ready to send; none when running from unbundled sources. */
function servedPanel() {
  const page = builtinPanel();
  return page === undefined ? undefined : preparePanel(page);
}
