// First: sets V8's late flags before anything else allocates (src/memory/copy-and-run.ts).
import './memory/v8-flags-first.js';
import { parseArgs } from 'node:util';
import { readCheckedConfig, type CheckOptions } from './runtime/checked-config.js';
import { automationReferenceProblems } from './automations/references.js';
import { describeAutomation } from './automations/describe.js';
import { certificateCheckLine } from './tls/certificate-check-line.js';
import { makeCertificateNow } from './tls/make-certificate-now.js';
import { ConfigError } from './config/errors.js';
import { startupSummary } from './config/summary.js';
import type { Config } from './config/types.js';
import { EXIT_CONFIG, EXIT_TEMPORARY, EXIT_USAGE } from './lifecycle/exit-codes.js';
import { exitOnUnexpectedErrors } from './lifecycle/unexpected-error.js';
import { createLogger, type LogLevel } from './logging/log.js';
import { openLogFile, type LogFile } from './logging/log-file.js';
import { exposeGcLate, setV8FlagsLate } from './memory/copy-and-run.js';
import { ReloadTimeout, VerdictWriter, requestReload, verdictDirectory } from './lifecycle/reload-verdict.js';
import { loadMallocTrim } from './memory/malloc-trim.js';
import { collectAfterBursts, exposedGc } from './memory/quiet-gc.js';
import { keepTickObjectShape } from './memory/tick-shape.js';
import { readPlanOf } from './runtime/planned-reads.js';
import { createService } from './runtime/service.js';
import { ControlSetupError } from './control/output-control.js';
import { startStatsLine } from './logging/stats-line.js';
import { SHUTDOWN_BOUND_MS } from './lifecycle/shutdown.js';
import { VERSION, VERSION_TEXT } from './lifecycle/version.js';

// Command-line entry of the daemon.

/** A reload waits for a file still being written and for one in progress: generous. */
import { hashPasswordCommand } from './lifecycle/hash-password-command.js';

const RELOAD_ANSWER_BOUND_MS = 60_000;
/** Long enough for the first scans, the 1-Wire discovery and the listeners. */
const STARTUP_SETTLED_MS = 5_000;

const USAGE = `iogate ${VERSION} — EVOK-compatible API daemon for Unipi PLCs

Usage: iogate [--config FILE] [--port N] [--address A] [--hw-dir DIR] [--autogen FILE] [--debug] [--read-plan]
       iogate --check-config [--config FILE] [...]
       iogate --make-certificate [--config FILE]
       iogate --reload --pid PID [--config FILE] [...]
       iogate --hash-password < password

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
      --reload        have the running daemon PID (--pid, or systemd's $MAINPID) reload FILE: check it
                      first, send SIGHUP, wait for the daemon's verdict and print it; exit 0 when it
                      was applied, 78 when the file is invalid or the daemon refused it, 75 when no
                      verdict came within 60 s (the unit's ExecReload, so systemctl reload fails)
      --make-certificate  with apis.tls: {self_signed: true}: make the key and certificate in state_dir
                      now (as start-up would; kept when still good), print the fingerprint and exit
      --hash-password read a password on standard input (not echoed on a terminal) and print its
                      scrypt hash for apis.auth.users' password_hash
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
        reload: { type: 'boolean' },
        pid: { type: 'string' },
        'replacing-evok': { type: 'boolean' },
        debug: { type: 'boolean', short: 'd' },
        'read-plan': { type: 'boolean' },
        'make-certificate': { type: 'boolean' },
        'hash-password': { type: 'boolean' },
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
  if (args['hash-password']) {
    void hashPasswordCommand().then((status) => {
      process.exitCode = status;
    });
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
    const what = args['check-config'] ? 'configuration check failed' : args.reload ? 'reload not sent, the daemon keeps its configuration' : 'cannot start';
    process.stderr.write(`iogate: ${what}: ${message}\n`);
    process.exit(EXIT_CONFIG);
  }
  const { config, warnings } = checked;
  const automationProblems = automationReferenceProblems(config, checked.findModel);
  if (automationProblems.length > 0) {
    const message = new ConfigError(automationProblems).message;
    process.stderr.write(`iogate: ${args['check-config'] ? 'configuration check failed' : 'cannot start'}: ${message}\n`);
    process.exit(EXIT_CONFIG);
  }

  if (args.reload) {
    reloadRunningDaemon(args.pid ?? process.env['MAINPID'], config.stateDir);
    return;
  }
  if (args['check-config']) {
    for (const warning of warnings) process.stderr.write(`WARNING ${warning}\n`);
    const automations = config.automations.map((automation) => `  ${describeAutomation(automation)}\n`).join('');
    const certificate = certificateCheckLine(config.apis.tls);
    process.stdout.write(`${startupSummary(config)}\n${certificate ? `${certificate}\n` : ''}${automations ? `Automations:\n${automations}` : ''}Configuration OK\n`);
    return;
  }
  if (args['make-certificate']) {
    makeCertificateNow(config.apis.tls);
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
  // Started as `node iogate.js`, without the unit's options: what can still be had (src/memory/copy-and-run.ts).
  const gcExposedLate = exposeGcLate();
  const trimAddon = loadMallocTrim(typeof __dirname === 'string' ? __dirname : undefined);
  const trimThresholdSetLate = process.env['MALLOC_TRIM_THRESHOLD_'] === undefined && 'trim' in trimAddon && trimAddon.setTrimThreshold();
  log.info(`iogate ${VERSION_TEXT} (node ${process.version}) starting with ${config.file ?? 'the built-in configuration'}`);
  for (const warning of warnings) log.warn(warning);
  // Already set by ./memory/v8-flags-first.js, before the modules ran: this only returns which.
  const v8FlagsSetLate = setV8FlagsLate();
  if (gcExposedLate || trimThresholdSetLate || v8FlagsSetLate.length > 0) {
    const late = [...v8FlagsSetLate, gcExposedLate ? 'gc()' : '', trimThresholdSetLate ? "glibc's 64 KB trim threshold" : ''].filter(Boolean).join(', ');
    log.info(`memory: started without the service unit's node options; set ${late} at run time (run the bundle itself, ./iogate.js, for the rest)`);
  }
  // The threshold set late holds only for frees from now on: what start-up freed
  // under glibc's default stays unless it is trimmed once, when start-up is over.
  if (trimThresholdSetLate && 'trim' in trimAddon) setTimeout(() => exposedGc(trimAddon.trim)?.(), STARTUP_SETTLED_MS).unref();

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
    const load = trimAddon;
    if ('trim' in load) {
      log.debug('memory: the C heap is trimmed after each burst of requests (malloc_trim)');
      return load.trim;
    }
    if ('failed' in load) log.warn(`memory: the malloc_trim addon cannot be used, so the C heap a burst of requests frees is kept: ${load.failed}`);
    else log.debug(`memory: no malloc_trim addon (${load.absent})`);
    return undefined;
  }

  // `iogate --reload` (the unit's ExecReload) waits for this file (src/lifecycle/reload-verdict.ts).
  const verdicts = new VerdictWriter(process.pid, (message) => log.warn(message));
  process.on('SIGHUP', () => {
    const startedAt = Date.now();
    log.info('SIGHUP: reloading the configuration');
    // An invalid file is logged by the reload itself; the daemon serves on.
    service.reload().then(
      (report) => verdicts.record(verdictDirectory(service.config.stateDir), { startedAt, applied: true, message: report.summary }),
      (error: unknown) => {
        if (!(error instanceof ConfigError)) log.error(`reload failed: ${(error as Error).message}`);
        const message = error instanceof ConfigError ? error.problems.join('; ') : (error as Error).message;
        return verdicts.record(verdictDirectory(service.config.stateDir), { startedAt, applied: false, message });
      },
    );
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

/** `iogate --reload`: the verdict on stdout, and the exit status systemctl reload reports. */
function reloadRunningDaemon(pidText: string | undefined, stateDir: string): void {
  const pid = Number(pidText);
  if (!(Number.isInteger(pid) && pid > 1)) {
    process.stderr.write(`--reload: no daemon to reload: give its process id with --pid (systemd passes $MAINPID)\n`);
    process.exit(EXIT_USAGE);
  }
  requestReload(pid, verdictDirectory(stateDir), RELOAD_ANSWER_BOUND_MS).then(
    (verdict) => {
      process.stdout.write(`iogate: ${verdict.applied ? verdict.message : `reload refused, still serving the previous configuration: ${verdict.message}`}\n`);
      process.exit(verdict.applied ? 0 : EXIT_CONFIG);
    },
    (error: Error) => {
      process.stderr.write(`iogate: reload: ${error.message}\n`);
      process.exit(error instanceof ReloadTimeout ? EXIT_TEMPORARY : EXIT_CONFIG);
    },
  );
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
