// What the benchmarks share: wrk runs, the daemon and bare-server processes,
// free ports, and what /proc says about a process (CPU time, memory).
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { cpus, tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { mallocTrimFile } from '../deploy/native-addon.mjs';
import { endWithThisProcess } from '../test/helpers/orphan-guard.mjs';

export const BENCH_DIR = fileURLToPath(new URL('.', import.meta.url));
export const BUNDLE = fileURLToPath(new URL('../dist/iogate.js', import.meta.url));
export const SIM_BUNDLE = fileURLToPath(new URL('../dist/iogate-sim.js', import.meta.url));
export const RESULTS = join(BENCH_DIR, 'results');
const SERVICE_UNIT = fileURLToPath(new URL('../deploy/iogate.service', import.meta.url));

export function positive(name, fallback) {
  const value = Number(process.env[name] ?? fallback);
  if (!(value > 0)) throw new Error(`${name} must be a positive number`);
  return value;
}

/**
 * Seconds from a daemon's first answer to its idle window. V8 compiles and
 * collects for the first seconds (its memory reducer starts 8 s in), which is
 * not what the daemon costs while it runs (BENCH_IDLE_AFTER, default 12).
 */
export const IDLE_AFTER_S = Number(process.env.BENCH_IDLE_AFTER ?? 12);

/**
 * The environment a measured server starts with: this process's, without the
 * variables that change how node itself starts (NODE_OPTIONS,
 * NODE_EXTRA_CA_CERTS, …), which a system service does not inherit. With
 * NODE_EXTRA_CA_CERTS set, node parses the whole root certificate store at
 * start-up: about 0.7 MB of C heap the service never holds.
 */
export function inheritedEnvironment() {
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('NODE_')));
}

/** Splits a `name=value` command-line spec (the benches' --variant and the like). */
export function namedSpec(spec) {
  const equals = spec.indexOf('=');
  if (equals <= 0) throw new Error(`expected name=value, got '${spec}'`);
  return [spec.slice(0, equals), spec.slice(equals + 1)];
}

/** Node options written as one string ('' = none) as the list spawn takes. */
export function optionWords(text) {
  return text.trim() === '' ? [] : text.trim().split(/\s+/);
}

/** Node options the service unit starts the daemon with (`ExecStart=/usr/bin/node <options> …iogate.js`). */
export function serviceNodeOptions() {
  const execStart = /^ExecStart=(.*)$/m.exec(readFileSync(SERVICE_UNIT, 'utf8'))?.[1] ?? '';
  const words = execStart.trim().split(/\s+/);
  const script = words.findIndex((word) => word.endsWith('.js'));
  return words.slice(1, script).filter((word) => word.startsWith('--'));
}

/**
 * Environment variables the service unit sets (`Environment=NAME=value …` lines), so a bench runs the
 * daemon as production does. `BENCH_SERVICE_ENV=0` leaves them out (to measure what they change).
 */
export function serviceEnvironment() {
  if (process.env.BENCH_SERVICE_ENV === '0') return {};
  const env = {};
  for (const [, line] of readFileSync(SERVICE_UNIT, 'utf8').matchAll(/^Environment=(.*)$/gm)) {
    for (const [, quoted, bare] of line.matchAll(/"([^"]*)"|(\S+)/g)) {
      const assignment = quoted ?? bare;
      const equals = assignment.indexOf('=');
      if (equals > 0) env[assignment.slice(0, equals)] = assignment.slice(equals + 1);
    }
  }
  return env;
}

const tempDirs = [];

/**
 * A fresh `<tmpdir>/<prefix>XXXXXX` for a bench's configs and daemon state,
 * removed when the bench process exits (as test/helpers/temp-dir.ts does for
 * the tests), so runs do not pile up in /tmp. A removal that fails is skipped.
 */
export function tempDir(prefix) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  if (tempDirs.push(dir) === 1) {
    process.on('exit', () => {
      for (const made of tempDirs) {
        try {
          rmSync(made, { recursive: true, force: true, maxRetries: 2 });
        } catch {
          // Left behind; nothing a bench can do about it at exit.
        }
      }
    });
  }
  return dir;
}

export function log(message) {
  process.stderr.write(`bench: ${message}\n`);
}

// ---------------------------------------------------------------- wrk

export function ensureWrk() {
  if (hasWrk()) return;
  if (process.getuid?.() !== 0) {
    log('wrk is not installed; install it with `sudo apt-get install -y wrk` and run again');
    process.exit(1);
  }
  log('installing wrk (apt-get install -y wrk)');
  execFileSync('apt-get', ['install', '-y', 'wrk'], { stdio: 'inherit' });
  if (!hasWrk()) throw new Error('wrk still missing after apt-get install');
}

function hasWrk() {
  try {
    execFileSync('wrk', ['--version'], { stdio: 'ignore' });
  } catch (error) {
    // wrk --version prints its banner and exits 1; only a missing binary matters.
    return error.code !== 'ENOENT';
  }
  return true;
}

/** What a results file records about the machine and the load settings, shared by the benches. */
export function machineFacts({ threads, connections, seconds, nodeOptions, rounds }) {
  return {
    node: process.version,
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    wrk: wrkVersion(),
    wrkArgs: `-t${threads} -c${connections} -d${seconds}s --latency`,
    nodeOptions: nodeOptions.join(' '),
    rounds,
    // Whether the daemon could trim its C heap after a burst (docs/performance.md "Memory"): built only where a C compiler was.
    mallocTrimAddon: existsSync(mallocTrimFile(dirname(BUNDLE), `${process.platform}-${process.arch}`)),
  };
}

export function wrkVersion() {
  try {
    execFileSync('wrk', ['--version'], { encoding: 'utf8' });
  } catch (error) {
    return String(error.stdout ?? '').split('\n')[0].replace(/\s*\[.*$/, '').trim();
  }
  return 'wrk';
}

/**
 * Runs wrk and returns req/s, p50/p99 in ms, and the count of non-2xx/3xx replies.
 * `post`: { body, contentType } for the write benchmarks; `wrapper`: a command wrk runs under
 * (e.g. ['taskset', '-c', '1']).
 */
export async function runWrk(url, { seconds, threads, connections, post, wrapper = [] }) {
  const args = [`-t${threads}`, `-c${connections}`, `-d${seconds}s`, '--latency'];
  const env = { ...process.env };
  if (post) {
    args.push('-s', join(BENCH_DIR, 'post.lua'));
    env.BENCH_BODY = post.body;
    env.BENCH_CONTENT_TYPE = post.contentType;
  }
  const command = [...wrapper, 'wrk', ...args, url];
  const child = spawn(command[0], command.slice(1), { env, stdio: ['ignore', 'pipe', 'inherit'] });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk) => (output += chunk));
  const [code] = await once(child, 'exit');
  if (code !== 0) throw new Error(`wrk exited with ${code}:\n${output}`);
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(output)?.[1]);
  const percentile = (p) => {
    const match = new RegExp(`^\\s+${p}%\\s+([\\d.]+)(us|ms|s)\\s*$`, 'm').exec(output);
    if (!match) return null;
    return Number(match[1]) * { us: 0.001, ms: 1, s: 1000 }[match[2]];
  };
  const errors = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(output)?.[1] ?? 0);
  const socketErrors = /Socket errors:.*/.exec(output)?.[0];
  const requests = Number(/(\d+) requests in /.exec(output)?.[1]);
  return { rps: Math.round(rps), requests, p50Ms: percentile(50), p99Ms: percentile(99), non2xx: errors, socketErrors };
}

// ---------------------------------------------------------------- processes

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts the daemon with `config` (null: the built-in simulated controller) on `port`; collects its
 * stats lines as they come. `ipc`: with an IPC channel (for bench/probe.cjs); `cwd`: its working directory;
 * `node`: the command that runs node (with its arguments), e.g. under qemu-user; `stdout`: piped
 * (e.g. for V8's --trace-gc lines) rather than dropped. `start` is how it is started:
 *   - 'unit' (default): `node <nodeOptions> iogate.js` with the unit's environment, as deploy/iogate.service does;
 *   - 'plain': `node <nodeOptions> iogate.js` without the unit's environment, as copied and started by hand
 *     (nodeOptions [] for node's defaults);
 *   - 'program': `./iogate.js`, the bundle run as a program (its #! line's node options and environment,
 *     with this node first on PATH); nodeOptions go through NODE_OPTIONS.
 */
export function spawnDaemon(config, port, { env = {}, nodeOptions = serviceNodeOptions(), bundle = BUNDLE, ipc = false, cwd, node = [process.execPath], stdout = false, start = 'unit' } = {}) {
  const configArgs = config === null ? [] : ['--config', withPrivateState(config)];
  const program = start === 'program';
  const [command, ...commandArgs] = program ? [bundle] : [...node, ...nodeOptions, bundle];
  const startEnvironment = {
    unit: serviceEnvironment(),
    plain: {},
    program: { PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}`, ...(nodeOptions.length > 0 ? { NODE_OPTIONS: nodeOptions.join(' ') } : {}) },
  }[start];
  if (!startEnvironment) throw new Error(`spawnDaemon: start is unit, plain or program, not ${start}`);
  const child = spawn(command, [...commandArgs, ...configArgs, '--port', String(port)], {
    env: { ...inheritedEnvironment(), ...startEnvironment, ...env },
    stdio: ['ignore', stdout ? 'pipe' : 'ignore', 'pipe', ...(ipc ? ['ipc'] : [])],
    // The built-in configuration keeps its state beside the working directory's alias.yaml.
    cwd: cwd ?? (config === null ? tempDir('iogate-bench-state-') : undefined),
  });
  reapAtExit(child);
  const stats = [];
  let pending = '';
  let output = '';
  child.stderr.setEncoding('utf8').on('data', (chunk) => {
    pending += chunk;
    const lines = pending.split('\n');
    pending = lines.pop();
    for (const line of lines) {
      if (line.startsWith('stats ')) stats.push({ ...JSON.parse(line.slice(6)), receivedAt: performance.now() });
      else output += `${line}\n`;
    }
  });
  return { child, stats, output: () => output };
}

/**
 * `config` as a bench daemon runs it: a config without `alias_file` or
 * `state_dir` keeps its aliases and state (counter totals, …) in EVOK's
 * /var/lib/evok, which a bench must not touch; such a config gets both in a
 * temp directory of its own (a copy with `alias_file` added: bench configs
 * name no relative paths).
 */
export function withPrivateState(config) {
  const text = readFileSync(config, 'utf8');
  if (/^(alias_file|state_dir):/m.test(text)) return config;
  const dir = tempDir('iogate-bench-state-');
  const file = join(dir, 'config.yaml');
  writeFileSync(file, `alias_file: ${join(dir, 'alias.yaml')}\n${text}`);
  return file;
}

/**
 * Servers and simulators a bench started are stopped when it exits, however it ends (a failed
 * one, or one killed, included). Those started here are reaped already; a bench passes the
 * processes it spawns itself. The tests' helpers do the same with the same code.
 */
export function reapAtExit(child) {
  return endWithThisProcess(child);
}

/**
 * Starts the bare node:http server replaying `repliesFile`; resolves once it listens.
 * `ipc`: with an IPC channel (for bench/probe.cjs). `planFile`: it also polls that read plan (planOverTcp).
 * Given --expose-gc, bareCollect(child) makes it run the daemon's quiet collections.
 */
export async function spawnBare(port, repliesFile, nodeOptions = [], { ipc = false, planFile } = {}) {
  // With --expose-gc, gc() twice on SIGUSR2 (bareCollect): what src/memory/quiet-gc.ts does after a burst.
  // The hook goes in through --import of a data: URL, so the bare server's own file stays as it is.
  const hook = collectsLikeTheDaemon(nodeOptions) ? ['--import', `data:text/javascript,${encodeURIComponent("process.on('SIGUSR2',()=>{gc();gc()})")}`] : [];
  const child = spawn(process.execPath, [...nodeOptions, ...hook, join(BENCH_DIR, 'bare-server.mjs'), String(port), repliesFile, ...(planFile ? [planFile] : [])], {
    env: inheritedEnvironment(),
    stdio: ['ignore', 'pipe', 'inherit', ...(ipc ? ['ipc'] : [])],
  });
  reapAtExit(child);
  await new Promise((resolve, reject) => {
    child.stdout.once('data', resolve);
    child.once('exit', (code) => reject(new Error(`bare server exited with ${code}`)));
  });
  return child;
}

/** Whether a bare server started with these node options takes bareCollect (it has gc()). */
export function collectsLikeTheDaemon(nodeOptions) {
  return nodeOptions.includes('--expose-gc');
}

/** A bare server started with --expose-gc runs two full collections, as the daemon does once a burst is over. */
export function bareCollect(child) {
  child.kill('SIGUSR2');
}

/**
 * The two Modbus TCP simulators of the contention and input-latency benches
 * and a daemon config polling them: the brain board whose input flips shares
 * bus TCP_A with two more boards, a second bus carries two boards, all at
 * `scanHz`; `inputHz` (0: off) is the brain board's input_scan_frequency.
 * Returns the simulators, the config file and the fresh temp directory holding it.
 */
export async function startContentionBoards({ name, scanHz, inputHz, wsClients }) {
  const simA = await spawnSim([['00', 1], ['0A', 2], ['0A', 3]]);
  const simB = await spawnSim([['0A', 1], ['08', 2]]);
  const work = tempDir(`iogate-${name}-`);
  const config = join(work, 'config.yaml');
  const fast = inputHz > 0 ? `, input_scan_frequency: ${inputHz}` : '';
  writeFileSync(
    config,
    `apis:
  websocket:
    enabled: true
  limits:
    max_websocket_clients: ${Math.max(256, wsClients)}
comm_channels:
  TCP_A:
    type: MODBUSTCP
    port: ${simA.tcpPort}
    devices:
      1: {model: '00', slave-id: 1, scan_frequency: ${scanHz}${fast}}
      2: {model: '0A', slave-id: 2, scan_frequency: ${scanHz}}
      3: {model: '0A', slave-id: 3, scan_frequency: ${scanHz}}
  TCP_B:
    type: MODBUSTCP
    port: ${simB.tcpPort}
    devices:
      4: {model: '0A', slave-id: 1, scan_frequency: ${scanHz}}
      5: {model: '08', slave-id: 2, scan_frequency: ${scanHz}}
`,
  );
  return { simA, simB, config, work };
}

/** Sends bench/probe.cjs in `child` a message and resolves with its reply of kind `answer`. */
export function askProbe(child, message, answer) {
  return new Promise((resolve, reject) => {
    const onMessage = (reply) => {
      if (reply.probe === 'error') reject(new Error(reply.message));
      else if (reply.probe === answer) resolve(reply);
      else return;
      child.off('message', onMessage);
    };
    child.on('message', onMessage);
    child.send(message);
  });
}

/** Messages from a child process, awaited one by one in order; the bench ends if the child fails. */
export function messageQueue(child) {
  const queue = [];
  const waiters = [];
  child.on('message', (message) => (waiters.length ? waiters.shift()(message) : queue.push(message)));
  child.on('exit', (code) => {
    if (code) {
      log(`client process exited with ${code}`);
      process.exit(1);
    }
  });
  return { next: () => (queue.length ? Promise.resolve(queue.shift()) : new Promise((resolve) => waiters.push(resolve))) };
}

/** Starts iogate-sim on a free TCP port with a control endpoint; `boards`: [[model, unit], …]. */
export async function spawnSim(boards, { toggleMs = 0 } = {}) {
  const args = [SIM_BUNDLE, '--tcp', '127.0.0.1:0', '--control', '127.0.0.1:0', '--toggle-ms', String(toggleMs)];
  for (const [model, unit] of boards) args.push('--model', model, '--slave-id', String(unit));
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  reapAtExit(child);
  let output = '';
  await new Promise((resolve, reject) => {
    child.stderr.setEncoding('utf8').on('data', (chunk) => {
      output += chunk;
      if (/^serving /m.test(output)) resolve();
    });
    child.once('exit', (code) => reject(new Error(`iogate-sim exited with ${code}: ${output}`)));
  });
  return {
    child,
    tcpPort: Number(/on tcp \S+:(\d+)/.exec(output)[1]),
    controlUrl: /control on (http:\/\/\S+)/.exec(output)[1],
  };
}

/** How often simulated inputs step on the bench config's SIMULATOR lines (their default toggle_ms), for simulators standing in for them. */
export const BENCH_TOGGLE_MS = 2000;

/**
 * `source` (a daemon config) with each SIMULATOR line served by an iogate-sim
 * of its own over Modbus TCP, written to `file`, so the daemon's CPU is its own
 * work and not the simulator's. `scanHz`: every board's scan_frequency instead
 * of its own. Returns the file and the simulators (stopped when the bench exits).
 */
export async function configOverTcp(source, file, { toggleMs = 0, scanHz } = {}) {
  const tree = parseYaml(readFileSync(source, 'utf8'));
  const sims = [];
  for (const channel of Object.values(tree.comm_channels)) {
    if (channel.type !== 'SIMULATOR') continue;
    const boards = Object.values(channel.devices).map((device) => [String(device.model), device['slave-id']]);
    if (scanHz) for (const device of Object.values(channel.devices)) device.scan_frequency = Number(scanHz);
    const sim = await spawnSim(boards, { toggleMs });
    sims.push(sim);
    Object.assign(channel, { type: 'MODBUSTCP', hostname: '127.0.0.1', port: sim.tcpPort });
  }
  writeFileSync(file, stringifyYaml(tree));
  return { file, sims };
}

/** The daemon's read plan for a config (null: the built-in one), from the daemon itself (`--read-plan`). */
export function readPlanOf(config, { bundle = BUNDLE, cwd } = {}) {
  const configArgs = config === null ? [] : ['--config', config];
  return JSON.parse(execFileSync(process.execPath, [bundle, ...configArgs, '--read-plan'], { encoding: 'utf8', cwd })).buses;
}

/**
 * A read plan (readPlanOf) pointed at iogate-sims of its own with the same
 * boards, one per bus, written to `file` for bench/bare-poller.mjs.
 */
export async function planOverTcp(plan, file, { toggleMs = 0 } = {}) {
  const sims = [];
  const buses = [];
  for (const bus of plan) {
    const sim = await spawnSim(
      bus.slaves.map((slave) => [slave.model, slave.unit]),
      { toggleMs },
    );
    sims.push(sim);
    buses.push({ port: sim.tcpPort, slaves: bus.slaves });
  }
  writeFileSync(file, JSON.stringify({ buses }));
  return { file, sims };
}

/** The read plan of `config` against simulators of its own, written in `work`: the file a bare server polls (spawnBare's planFile). */
export async function barePollPlan(config, work) {
  return (await planOverTcp(readPlanOf(config, { cwd: work }), join(work, 'plan.json'), { toggleMs: BENCH_TOGGLE_MS })).file;
}

export async function stop(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  await once(child, 'exit');
}

export function get(port, path, method = 'GET', body) {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method, agent: false }, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    if (body) {
      req.setHeader('Content-Type', body.contentType);
      req.end(body.body);
    } else {
      req.end();
    }
  });
}

export async function waitForAnswer(port, path, child) {
  for (;;) {
    if (child.exitCode !== null) throw new Error(`daemon exited with ${child.exitCode} before answering`);
    try {
      const { status } = await get(port, path);
      if (status === 200) return;
    } catch {
      // Not listening yet.
    }
    await sleep(2);
  }
}

/** A reply as the bare server replays it: headers without the per-connection ones, body in base64. */
export async function captureReply(port, path) {
  const reply = await get(port, path);
  if (reply.status !== 200) throw new Error(`GET ${path}: ${reply.status}`);
  const headers = Object.fromEntries(
    Object.entries(reply.headers).filter(([name]) => !['date', 'connection', 'keep-alive'].includes(name)),
  );
  return { headers, body: reply.body.toString('base64'), bytes: reply.body };
}

// ---------------------------------------------------------------- /proc

const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());

/** User and system CPU time of a process, in seconds. */
export function cpuTimes(pid) {
  // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { user: Number(fields[11]) / CLOCK_TICKS, system: Number(fields[12]) / CLOCK_TICKS };
}

export function cpuSeconds(pid) {
  const { user, system } = cpuTimes(pid);
  return user + system;
}

/**
 * CPU time of all the process's threads, in seconds, as the scheduler counts it
 * (`/proc/<pid>/task/<tid>/schedstat`, nanoseconds). /proc/<pid>/stat charges
 * whole clock ticks (10 ms) to whoever runs when the tick comes, which for a
 * process that wakes a thousand times a second for 20 µs is a coarse sample.
 * Threads that ended meanwhile are not counted (the daemon's live for good).
 */
export function runSeconds(pid) {
  let ns = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return ns / 1e9;
}

/**
 * RSS and its two parts, in MB: RssAnon is the memory only this process holds
 * (heap, stacks, buffers); RssFile is mapped files, mostly the node binary,
 * clean and shared with every other Node process on the machine.
 */
export function memoryOf(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field) => Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? NaN);
  return { rssMb: kb('VmRSS') / 1024, anonMb: kb('RssAnon') / 1024, fileMb: kb('RssFile') / 1024 };
}

/** The larger of each figure. */
export function maxMemory(a, b) {
  return { rssMb: Math.max(a.rssMb, b.rssMb), anonMb: Math.max(a.anonMb, b.anonMb), fileMb: Math.max(a.fileMb, b.fileMb) };
}

export const NO_MEMORY = { rssMb: 0, anonMb: 0, fileMb: 0 };

/** Samples memory every 200 ms until the returned function is called; that returns the maxima seen. */
export function memorySampler(pid) {
  let seen = memoryOf(pid);
  const timer = setInterval(() => (seen = maxMemory(seen, memoryOf(pid))), 200);
  return () => {
    clearInterval(timer);
    return (seen = maxMemory(seen, memoryOf(pid)));
  };
}

// ---------------------------------------------------------------- figures

export const fmt = (value, digits = 0) =>
  value === null || value === undefined || Number.isNaN(value)
    ? '–'
    : value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
export const ratio = (a, b) => (a && b ? `${fmt(a / b, 2)}×` : '–');

/** RSS with its private (RssAnon) and shared-file (RssFile) parts, as one table cell. */
export const memoryCell = (m) => (m ? `${fmt(m.rssMb, 1)} (${fmt(m.anonMb, 1)} + ${fmt(m.fileMb, 1)})` : '–');

export function median(values) {
  const sorted = values.filter((value) => value !== null && value !== undefined).sort((a, b) => a - b);
  if (sorted.length === 0) return null;
  const middle = sorted.length / 2;
  return sorted.length % 2 ? sorted[Math.floor(middle)] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/** p50, p99 and max of a list of samples. */
export function percentiles(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return { p50: at(0.5), p99: at(0.99), max: sorted.at(-1), count: sorted.length };
}

/** DI 1_01 of a simulated Brain board: where it lives in the board's registers, and its push in a WebSocket frame. */
export const BENCH_INPUT = { unit: 1, register: 0, bit: 0, marker: (value) => `"dev":"di","circuit":"1_01","value":${value},` };

/**
 * Moves `input` through a simulator's control API, and asks when it last changed. The change is
 * made by the simulator's own timer `delayMs` after the request is answered, so neither the
 * request nor the bench handling its reply competes with the daemon while the change travels.
 * `lastChange` gives the change's time and the time the daemon's poll read it (hrtime, ns).
 */
export function simInputControl(control, input = BENCH_INPUT) {
  return {
    async flip(value, delayMs) {
      const response = await fetch(`${control}/registers`, {
        method: 'POST',
        body: JSON.stringify({ unit: input.unit, space: 'holding', address: input.register, values: [value << input.bit], delayMs }),
      });
      if (!response.ok) throw new Error(`simulator control: ${response.status} ${await response.text()}`);
    },
    async lastChange() {
      const { at, readAt } = await (await fetch(`${control}/changes?unit=${input.unit}`)).json();
      if (at === null) throw new Error('the simulator did not set the input');
      return { at: BigInt(at), read: readAt === null ? undefined : BigInt(readAt) };
    },
  };
}
