import { parseArgs } from 'node:util';
import { readCheckedConfig, type CheckOptions } from './checked-config.js';
import { automationReferenceProblems } from './automations/references.js';
import { describeAutomation } from './automations/describe.js';
import { ConfigError } from './config/errors.js';
import { startupSummary } from './config/summary.js';
import type { Config } from './config/types.js';
import { EXIT_CONFIG, EXIT_TEMPORARY, EXIT_USAGE } from './exit-codes.js';
import { exitOnUnexpectedErrors } from './unexpected-error.js';
import { createLogger, type LogLevel } from './log.js';
import { openLogFile, type LogFile } from './log-file.js';
import { loadMallocTrim } from './memory/malloc-trim.js';
import { collectAfterBursts, exposedGc } from './memory/quiet-gc.js';
import { keepTickObjectShape } from './memory/tick-shape.js';
import { readPlanOf } from './runtime.js';
import { createService } from './service.js';
import { ControlSetupError } from './control/output-control.js';
import { startStatsLine } from './stats-line.js';
import { SHUTDOWN_BOUND_MS } from './shutdown.js';
import { VERSION, VERSION_TEXT } from './version.js';

// Command-line entry of the daemon.

const USAGE = `iogate ${VERSION} — EVOK-compatible API daemon for Unipi PLCs

Usage: iogate [--config FILE] [--port N] [--address A] [--hw-dir DIR] [--autogen FILE] [--debug] [--read-plan]
       iogate --check-config [--config FILE] [...]

  -c, --config FILE   EVOK config.yaml to read (default: built-in simulated Neuron, no hardware)
  -p, --port N        HTTP/WebSocket port (overrides apis.port; default 8080)
  -a, --address A     address to listen on (overrides apis.address; default 127.0.0.1)
      --hw-dir DIR    extra directory of hw-definition YAML files (EVOK v3 format)
      --autogen FILE  autogen file read when the config says autogen: true (default /etc/evok/autogen.yaml)
      --check-config  check the configuration as start-up does, without opening a port or a bus;
                      print the start-up summary and exit 0, or the problems and exit 78
      --replacing-evok  with --check-config: also refuse a file that does not say where to listen
                      (EVOK listened on every address; used by the package before switching over)
  -d, --debug         log at DEBUG level, with a trace of every Modbus frame (hex, timing; at most
                      50 lines per second and bus)
      --read-plan     print the Modbus reads the configuration's scans make (JSON) and exit
  -v, --version       print the version and exit
  -h, --help          print this help and exit

Signals: SIGHUP (systemctl reload iogate) re-reads the configuration and applies what changed;
an invalid file changes nothing (the reason is logged). SIGTERM/SIGINT stop.

Exit status: 0 stopped by SIGTERM/SIGINT, 2 bad command line, 78 configuration
error (not worth restarting), 75 the HTTP port is in use (try again later),
70 internal error (logged with its stack; restart).

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
        'check-config': { type: 'boolean' },
        'replacing-evok': { type: 'boolean' },
        debug: { type: 'boolean', short: 'd' },
        'read-plan': { type: 'boolean' },
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
  if (args['replacing-evok'] && !args['check-config']) {
    process.stderr.write(`--replacing-evok goes with --check-config\n`);
    process.exit(EXIT_USAGE);
  }

  const source: CheckOptions = {
    file: args.config,
    autogenFile: args.autogen,
    overrides: { port, address: args.address, hwDir: args['hw-dir'] },
    replacingEvok: args['replacing-evok'],
  };
  let checked;
  try {
    checked = readCheckedConfig(source);
  } catch (error) {
    const message = error instanceof ConfigError ? error.message : (error as Error).message;
    process.stderr.write(`iogate: ${args['check-config'] ? 'configuration check failed' : 'cannot start'}: ${message}\n`);
    process.exit(EXIT_CONFIG);
  }
  const { config, warnings } = checked;
  const automationProblems = automationReferenceProblems(config, checked.findModel);
  if (automationProblems.length > 0) {
    const message = new ConfigError(automationProblems).message;
    process.stderr.write(`iogate: ${args['check-config'] ? 'configuration check failed' : 'cannot start'}: ${message}\n`);
    process.exit(EXIT_CONFIG);
  }

  if (args['check-config']) {
    for (const warning of warnings) process.stderr.write(`WARNING ${warning}\n`);
    const automations = config.automations.map((automation) => `  ${describeAutomation(automation)}\n`).join('');
    process.stdout.write(`${startupSummary(config)}\n${automations ? `Automations:\n${automations}` : ''}Configuration OK\n`);
    return;
  }
  if (args['read-plan']) {
    process.stdout.write(`${JSON.stringify({ buses: readPlanOf(config, checked.findModel) })}\n`);
    return;
  }

  // Level and file follow the configuration, also after a reload; --debug wins.
  let level: LogLevel = args.debug ? 'DEBUG' : config.logging.level;
  let logFile: LogFile | undefined;
  let logFilePath: string | undefined;
  const applyLogging = (next: Config) => {
    level = args.debug ? 'DEBUG' : next.logging.level;
    if (next.logging.file !== logFilePath) {
      logFile?.close();
      logFilePath = next.logging.file;
      logFile = openConfiguredLogFile(logFilePath);
    }
  };
  applyLogging(config);
  const output = (text: string) => {
    process.stderr.write(text);
    logFile?.write(stampLines(text));
  };
  const log = createLogger(() => level, output);
  exitOnUnexpectedErrors(output);
  keepTickObjectShape();
  log.info(`iogate ${VERSION_TEXT} (node ${process.version}) starting with ${config.file ?? 'the built-in configuration'}`);
  for (const warning of warnings) log.warn(warning);

  let service: ReturnType<typeof createService>;
  try {
    service = createService({
    source,
    checked,
    log,
    applyLogging,
    // The level in force (--debug wins) and the file only if it is really written.
    output: (summary) => output(`${summary.replace(/^Logging: .*$/m, `Logging: ${level}${logFile ? ` to ${logFilePath}` : ''}`)}\n`),
    traceModbus: args.debug === true,
    afterBursts: (requestsSeen) => collectAfterBursts(requestsSeen, mallocTrimAfterCollections()),
    });
  } catch (error) {
    // Interlocks and covers are bound to their outputs (by circuit or alias) once the devices exist.
    if (!(error instanceof ControlSetupError)) throw error;
    process.stderr.write(`iogate: cannot start: ${error.message}\n`);
    process.exit(EXIT_CONFIG);
  }
  const statsMs = Number(process.env['IOGATE_STATS_MS'] ?? 0);
  if (statsMs > 0) startStatsLine(service.runtime, statsMs, (line) => process.stderr.write(line));
  service.start().catch((error: NodeJS.ErrnoException) => {
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
    log.error(`cannot start: ${error.message}`);
    process.exit(1);
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

  process.on('SIGHUP', () => {
    log.info('SIGHUP: reloading the configuration');
    // An invalid file is logged by the reload itself; the daemon serves on.
    service.reload().catch((error: unknown) => {
      if (!(error instanceof ConfigError)) log.error(`reload failed: ${(error as Error).message}`);
    });
  });

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    // Backstop in case a step ignores its bound; a little later than the bound so the steps normally finish first.
    setTimeout(() => process.exit(0), SHUTDOWN_BOUND_MS + 500).unref();
    void service.stop(signal).finally(() => {
      logFile?.close();
      process.exit(0);
    });
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

/** Log-file lines carry the time; the journal adds its own to stderr. */
function stampLines(text: string): string {
  const stamp = new Date().toISOString();
  return text.replace(/^(?=.)/gm, `${stamp} `);
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
