// The Modbus TCP server against mbusd, the TCP to RTU gateway most sites run,
// over the same simulated RTU line and with the same clients. For each gateway
// a socat pty pair joins it to `iogate-sim --rtu` (a Brain board at unit 1);
// --clients clients read FC3 of two registers back to back for --seconds.
// Measured per gateway: requests/s, latency p50/p99, the gateway's CPU per
// request (its utime + stime over the answers), and the requests the board
// served (the simulator's own count). Gateways:
//   mbusd              built from ../shared/peers/mbusd with cmake in a temp
//                      dir (or MBUSD_SOURCE=<dir>, MBUSD=<binary>); skipped when
//                      neither exists; with -R1, its shortest pause between
//                      requests on the line (its default, 100 ms, caps it at
//                      10 requests/s);
//   iogate, polling off (scan_enabled: false): every read goes to the line,
//                      which is all mbusd does;
//   iogate, polling on (50 Hz, its normal case): reads of the polled
//                      registers come from the poll cache; the saving is the
//                      client requests the board did not have to serve.
//
//   node bench/modbus-server-vs-mbusd.mjs [--seconds N] [--clients N] [--baud N]
//        [--only mbusd,off,on]   run these passes alone
//        [--warm-up S]           one client's reads before measuring (default 0.5 s);
//                                at a few hundred requests a second V8 is still
//                                optimising iogate's request path for seconds
//        [--warm-up-clients N]   the warm-up's clients (default 1); with the
//                                measured number, V8 has seen the measured load
//                                (requests waiting for the bus, ten sockets)
//                                before the pass, not only one client's
//        [--cpu-prof DIR]        iogate runs under node --cpu-prof, its profiles
//                                in DIR (read them with bench/cpu-profile.mjs)
//        [--bundle FILE]         iogate's bundle (default dist/iogate.js): another
//                                build, to compare two in alternate runs
//        [--together N]          N runs of mbusd and iogate (polling off) measured
//                                AT THE SAME TIME, each in a process of its own
//                                with its own line, simulator and clients, their
//                                measured windows aligned (--measure-at): both
//                                gateways see the same machine load, which on a
//                                shared machine moves a one-after-the-other
//                                ratio by more than the gap being measured.
//                                Prints each run's ratio and the median.
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { SIM_BUNDLE, cpuSeconds, serviceNodeOptions, fmt, freePort, get, percentiles, reapAtExit, spawnDaemon, stop, tempDir } from './common.mjs';

const { values } = parseArgs({
  options: { seconds: { type: 'string', default: '10' }, clients: { type: 'string', default: '10' }, baud: { type: 'string', default: '115200' },
    only: { type: 'string', default: 'mbusd,off,on' },
    'warm-up': { type: 'string', default: '0.5' },
    'warm-up-clients': { type: 'string', default: '1' },
    'cpu-prof': { type: 'string' },
    bundle: { type: 'string' },
    together: { type: 'string' },
    'measure-at': { type: 'string' },
  },
});
const SECONDS = Number(values.seconds);
const CLIENTS = Number(values.clients);
const BAUD = Number(values.baud);
const WARM_UP_S = Number(values['warm-up']);
const WARM_UP_CLIENTS = Number(values['warm-up-clients']);
const ONLY = new Set(values.only.split(','));
const NODE_OPTIONS = values['cpu-prof'] ? [...serviceNodeOptions(), '--cpu-prof', `--cpu-prof-dir=${values['cpu-prof']}`] : serviceNodeOptions();
// Beside the clone, as the source of the peers the interop suite builds.
const MBUSD_SOURCE = process.env.MBUSD_SOURCE ?? fileURLToPath(new URL('../../shared/peers/mbusd', import.meta.url));

/** mbusd's binary: $MBUSD, or built from its source into a temp dir; null when neither is there. */
function mbusdBinary() {
  if (process.env.MBUSD) return process.env.MBUSD;
  if (!existsSync(join(MBUSD_SOURCE, 'CMakeLists.txt'))) return null;
  const build = tempDir('iogate-bench-mbusd-build-');
  execFileSync('cmake', ['-S', MBUSD_SOURCE, '-B', build, '-DCMAKE_BUILD_TYPE=Release'], { stdio: 'ignore' });
  execFileSync('cmake', ['--build', build, '-j', '2'], { stdio: 'ignore' });
  return join(build, 'mbusd');
}

async function ptyPair(dir) {
  const a = join(dir, 'slave-tty');
  const b = join(dir, 'master-tty');
  const child = spawn('socat', ['-d', '-d', `pty,raw,echo=0,link=${a}`, `pty,raw,echo=0,link=${b}`], { stdio: ['ignore', 'ignore', 'pipe'] });
  reapAtExit(child);
  let output = '';
  await new Promise((resolve, reject) => {
    child.stderr.setEncoding('utf8').on('data', (chunk) => {
      output += chunk;
      if (output.includes('starting data transfer loop')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`socat exited with ${code}: ${output}`)));
  });
  return { a, b, child };
}

async function rtuSim(tty) {
  const child = spawn(process.execPath, [SIM_BUNDLE, '--model', '00', '--slave-id', '1', '--rtu', tty, '--baud', String(BAUD), '--control', '127.0.0.1:0'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  reapAtExit(child);
  let output = '';
  await new Promise((resolve, reject) => {
    child.stderr.setEncoding('utf8').on('data', (chunk) => {
      output += chunk;
      if (/^serving /m.test(output)) resolve();
    });
    child.once('exit', (code) => reject(new Error(`iogate-sim exited with ${code}: ${output}`)));
  });
  const controlUrl = /control on (http:\/\/\S+)/.exec(output)[1];
  return { child, served: async () => ((await (await fetch(`${controlUrl}/stats`)).json())['1'].requests) };
}

/** Waits until a Modbus TCP server accepts connections on `port`. */
async function accepting(port, what) {
  for (let i = 0; i < 300; i++) {
    const socket = connect({ port, host: '127.0.0.1' });
    const ok = await new Promise((resolve) => {
      socket.once('connect', () => resolve(true));
      socket.once('error', () => resolve(false));
    });
    socket.destroy();
    if (ok) return;
    await sleep(100);
  }
  throw new Error(`${what} does not accept connections on ${port}`);
}

/** One client reading `request` back to back until `until`; the latency of each answer, in ms. */
async function client(port, request, until) {
  const socket = connect({ port, host: '127.0.0.1' });
  await once(socket, 'connect');
  socket.setNoDelay(true);
  const latencies = [];
  let id = 0;
  let sentAt = 0;
  const send = () => {
    const header = Buffer.alloc(7);
    header.writeUInt16BE((id = (id % 0xffff) + 1), 0);
    header.writeUInt16BE(request.length + 1, 4);
    header[6] = 1;
    sentAt = performance.now();
    socket.write(Buffer.concat([header, request]));
  };
  await new Promise((resolve, reject) => {
    let buffered = Buffer.alloc(0);
    socket.on('error', reject);
    socket.on('data', (chunk) => {
      buffered = Buffer.concat([buffered, chunk]);
      while (buffered.length >= 7 && buffered.length >= 6 + buffered.readUInt16BE(4)) {
        if ((buffered[7] & 0x80) !== 0) return reject(new Error(`exception ${buffered[8]}`));
        buffered = buffered.subarray(6 + buffered.readUInt16BE(4));
        const now = performance.now();
        latencies.push(now - sentAt);
        if (now >= until) return resolve();
        send();
      }
    });
    send();
  });
  socket.destroy();
  return latencies;
}

const FC3 = Buffer.from([3, 0, 0, 0, 2]);

/** Runs the clients against a gateway on `port` (process `pid`); `line` counts the board's requests. */
async function measure(name, port, pid, sim, extra = async () => ({})) {
  // --measure-at (wall clock, ms): the warm-up runs until then, so two processes measure the same window.
  const warmUpUntil = values['measure-at'] ? performance.now() + (Number(values['measure-at']) - Date.now()) : performance.now() + WARM_UP_S * 1000;
  await Promise.all(Array.from({ length: WARM_UP_CLIENTS }, () => client(port, FC3, warmUpUntil)));
  // The simulator's count and the daemon's /metrics are read outside the measured CPU: the first
  // /metrics makes the daemon compile its HTTP path, which is no part of the gateway's work.
  const served0 = await sim.served();
  const extra0 = await extra();
  const cpu0 = cpuSeconds(pid);
  const started = performance.now();
  const until = started + SECONDS * 1000;
  const latencies = (await Promise.all(Array.from({ length: CLIENTS }, () => client(port, FC3, until)))).flat();
  const elapsed = (performance.now() - started) / 1000;
  const cpu = cpuSeconds(pid) - cpu0;
  const served = (await sim.served()) - served0;
  const extra1 = await extra();
  const { p50, p99 } = percentiles(latencies);
  return {
    name,
    answered: latencies.length,
    requestsPerS: latencies.length / elapsed,
    p50,
    p99,
    cpuMicrosPerRequest: (cpu / latencies.length) * 1e6,
    boardRequestsPerS: served / elapsed,
    cacheHits: extra1.cacheHits === undefined ? undefined : extra1.cacheHits - extra0.cacheHits,
  };
}

async function withLine(run) {
  const dir = tempDir('iogate-bench-line-');
  const cable = await ptyPair(dir);
  const sim = await rtuSim(cable.a);
  try {
    return await run(dir, cable.b, sim);
  } finally {
    await stop(sim.child);
    await stop(cable.child);
  }
}

async function mbusd(binary) {
  return withLine(async (dir, tty, sim) => {
    const port = await freePort();
    const child = spawn(binary, ['-d', '-v0', `-L${join(dir, 'mbusd.log')}`, `-p${tty}`, `-s${BAUD}`, `-P${port}`, '-A127.0.0.1', `-C${CLIENTS + 2}`, '-R1'], {
      stdio: 'ignore',
    });
    reapAtExit(child);
    try {
      await accepting(port, 'mbusd');
      return await measure('mbusd', port, child.pid, sim);
    } finally {
      await stop(child);
    }
  });
}

async function iogate(polling) {
  return withLine(async (dir, tty, sim) => {
    const port = await freePort();
    const httpPort = await freePort();
    const config = join(dir, 'config.yaml');
    const device = polling ? '{model: "00", slave-id: 1, scan_frequency: 50}' : '{model: "00", slave-id: 1, scan_enabled: false}';
    writeFileSync(
      config,
      [
        `alias_file: ${join(dir, 'alias.yaml')}`,
        'apis:',
        `  modbus_server: {enabled: true, port: ${port}}`,
        'comm_channels:',
        '  LINE:',
        '    type: MODBUSRTU',
        `    port: ${tty}`,
        `    baudrate: ${BAUD}`,
        '    parity: N',
        // On a loaded machine the simulator (or the daemon) stalls past the default 200 ms
        // now and then; the late reply would take the board offline for the rest of the pass.
        '    timeout: 1000',
        '    devices:',
        `      1: ${device}`,
        '',
      ].join('\n'),
    );
    const daemon = spawnDaemon(config, httpPort, { nodeOptions: NODE_OPTIONS, ...(values.bundle ? { bundle: values.bundle } : {}) });
    try {
      await accepting(port, 'iogate');
      await sleep(2000);
      const cacheHits = async () => {
        const text = (await get(httpPort, '/metrics')).body.toString('utf8');
        return { cacheHits: Number(/^iogate_modbus_server_cache_hits_total(?:\{[^}]*\})? (\d+)/m.exec(text)?.[1] ?? 0) };
      };
      return await measure(`iogate, polling ${polling ? 'on (50 Hz)' : 'off'}`, port, daemon.child.pid, sim, cacheHits);
    } finally {
      await stop(daemon.child);
    }
  });
}

/** One pass of this bench in a child process (`--only <pass>`); resolves with its result. */
async function childPass(pass, binary, measureAt) {
  const passArgs = process.argv.slice(2).filter((arg, i, all) => !['--together', '--only'].includes(arg) && !['--together', '--only'].includes(all[i - 1]) && !arg.startsWith('--together=') && !arg.startsWith('--only='));
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), ...passArgs, '--only', pass, '--measure-at', String(measureAt)], {
    env: { ...process.env, ...(binary ? { MBUSD: binary } : {}) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  reapAtExit(child);
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (chunk) => (out += chunk));
  const [code] = await once(child, 'exit');
  if (code !== 0) throw new Error(`the ${pass} pass exited with ${code}`);
  return JSON.parse(out.trim().split('\n').pop()).results[0];
}

if (values.together) {
  const runs = Number(values.together);
  const binary = mbusdBinary();
  if (!binary) throw new Error('--together needs mbusd: no source at ../shared/peers/mbusd and no $MBUSD');
  const ratios = [];
  for (let run = 1; run <= runs; run++) {
    // Both start now; each warms up until the same moment (start-up of either takes a few seconds).
    const measureAt = Date.now() + (Math.max(WARM_UP_S, 0) + 8) * 1000;
    const [reference, ours] = await Promise.all([childPass('mbusd', binary, measureAt), childPass('off', binary, measureAt)]);
    const ratio = ours.cpuMicrosPerRequest / reference.cpuMicrosPerRequest;
    ratios.push(ratio);
    process.stdout.write(
      `run ${run}: mbusd ${fmt(reference.cpuMicrosPerRequest, 1)} µs/request at ${fmt(reference.requestsPerS)}/s, iogate (polling off) ${fmt(ours.cpuMicrosPerRequest, 1)} µs/request at ${fmt(ours.requestsPerS)}/s: ${fmt(ratio, 2)}× mbusd\n`,
    );
  }
  const sorted = [...ratios].sort((a, b) => a - b);
  const median = sorted[Math.floor((sorted.length - 1) / 2)] / 2 + sorted[Math.ceil((sorted.length - 1) / 2)] / 2;
  process.stdout.write(`${JSON.stringify({ together: runs, clients: CLIENTS, seconds: SECONDS, ratios, median, min: sorted[0], max: sorted.at(-1) })}\n`);
  process.exit(0);
}

const binary = ONLY.has('mbusd') ? mbusdBinary() : null;
const results = [];
if (binary) results.push(await mbusd(binary));
else if (ONLY.has('mbusd')) process.stderr.write('mbusd: no source at ../shared/peers/mbusd and no $MBUSD; compared without it\n');
if (ONLY.has('off')) results.push(await iogate(false));
if (ONLY.has('on')) results.push(await iogate(true));
const reference = results.find((r) => r.name === 'mbusd');
const lines = [
  '| gateway | requests/s | p50 ms | p99 ms | µs CPU per request | × mbusd | board requests/s | served from the cache |',
  '|---|---|---|---|---|---|---|---|',
];
for (const r of results) {
  const times = reference ? `${fmt(r.cpuMicrosPerRequest / reference.cpuMicrosPerRequest, 2)}×` : '–';
  const saved = r.cacheHits === undefined ? '–' : `${fmt((100 * r.cacheHits) / r.answered, 1)} %`;
  lines.push(
    `| ${r.name} | ${fmt(r.requestsPerS)} | ${fmt(r.p50, 2)} | ${fmt(r.p99, 2)} | ${fmt(r.cpuMicrosPerRequest, 1)} | ${times} | ${fmt(r.boardRequestsPerS)} | ${saved} |`,
  );
}
process.stdout.write(`${lines.join('\n')}\n${JSON.stringify({ clients: CLIENTS, seconds: SECONDS, baud: BAUD, results })}\n`);
