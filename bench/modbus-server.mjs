// `npm run bench:modbus-server`: what the Modbus TCP server (apis.modbus_server)
// costs the daemon, and what it leaves to polling and the HTTP API. The daemon
// polls an iogate-sim Brain board over Modbus TCP at 50 Hz (the simulator is
// its own process, so its CPU is not counted), and serves it on its Modbus TCP
// server. Phases of --seconds each, taken in turn for --rounds rounds (the
// machine's noise then falls on every phase alike):
//   idle         polling alone (quiet: what the ratios are against);
//   cached       --clients clients reading FC3 of the polled registers back to
//                back (answered from the poll cache);
//   passthrough  the same clients reading FC1 of the watchdog-reset and
//                NV-save coils (pulses no register mirrors, so always sent on
//                to the board through the bus queue; the output coils are
//                answered from the cache).
// For each: the daemon's CPU (utime + stime), requests answered, CPU per
// request above idle, and, as ratios against idle, measured in the same run:
//   - the board's scans per second (polling's rate);
//   - REST: a light client GETting /rest/di/1_01 every 20 ms on a keep-alive
//     connection, p50 / p99 of its round trips;
//   - WebSocket: DI 1_01 flipped at the simulator (through its control API,
//     from its own timer a few ms after the request, as a wired input changes)
//     until the change reaches a WebSocket client, p50 / p99; and from the
//     daemon's read that saw it (stamped by the simulator) to the client,
//     which leaves out the wait for the next scan.
// The REST and WebSocket clients live in a process of their own, so the
// flooding clients in this one do not delay their clocks; times are taken on
// CLOCK_MONOTONIC (process.hrtime.bigint()), which every process shares.
//
//   node bench/modbus-server.mjs [--seconds N] [--clients N] [--rounds N] [--bundle dist/iogate.js]
// (--bundle: another build of the daemon, to compare builds.)
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { BUNDLE, cpuSeconds, fmt, freePort, get, percentiles, ratio, reapAtExit, spawnDaemon, spawnSim, stop, tempDir, BENCH_INPUT, simInputControl } from './common.mjs';

/** The light REST client's period. */
const REST_PERIOD_MS = 20;
/** DI 1_01 of the Brain board: unit 1, bit 0 of holding register 0. */
const INPUT = BENCH_INPUT;
/** The least time between the flip request's reply and the input changing. */
const FLIP_AFTER_MS = 5;
const SCAN_HZ = 50;
/** A change not at the WebSocket client by then counts as lost. */
const WS_GIVE_UP_MS = 2000;

if (process.argv[2] === '--probe') runProbe();
else await main();

async function main() {
  const { values } = parseArgs({ options: { seconds: { type: 'string', default: '5' }, clients: { type: 'string', default: '10' }, rounds: { type: 'string', default: '3' }, bundle: { type: 'string', default: BUNDLE } } });
  const SECONDS = Number(values.seconds);
  const CLIENTS = Number(values.clients);
  const ROUNDS = Number(values.rounds);

  const sim = await spawnSim([['00', INPUT.unit]]);
  const modbusPort = await freePort();
  const httpPort = await freePort();
  const dir = tempDir('iogate-bench-mbs-');
  const config = join(dir, 'config.yaml');
  writeFileSync(
    config,
    [
      `alias_file: ${join(dir, 'alias.yaml')}`,
      'apis:',
      `  modbus_server: {enabled: true, port: ${modbusPort}}`,
      '  websocket: {enabled: true}',
      'comm_channels:',
      '  LINE:',
      '    type: MODBUSTCP',
      '    hostname: 127.0.0.1',
      `    port: ${sim.tcpPort}`,
      '    devices:',
      `      1: {model: "00", slave-id: ${INPUT.unit}, scan_frequency: ${SCAN_HZ}}`,
      '',
    ].join('\n'),
  );
  const daemon = spawnDaemon(config, httpPort, { bundle: values.bundle });
  for (let i = 0; ; i++) {
    if (/Modbus TCP server listening/.test(daemon.output())) break;
    if (i > 300) throw new Error(`the daemon did not start its Modbus TCP server:\n${daemon.output()}`);
    await sleep(100);
  }
  await sleep(3000);

  const probe = reapAtExit(fork(fileURLToPath(import.meta.url), ['--probe'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }));
  const fromProbe = probeMessages(probe);
  probe.send({ start: { httpPort } });
  await fromProbe.next('ready');

  /** The board's scans so far, and the slots it skipped (the previous scan was still running, or the process stalled past them). */
  async function scans() {
    const text = (await get(httpPort, '/metrics')).body.toString('utf8');
    const counter = (name) => Number(new RegExp(`^${name}\\{[^}]*\\} (\\d+)`, 'm').exec(text)?.[1] ?? NaN);
    return { scans: counter('iogate_slave_scans_total'), overruns: counter('iogate_slave_scan_overruns_total') };
  }

  /** One client reading `request` back to back until `until`; returns the replies it got. */
  async function client(request, until) {
    const socket = connect({ port: modbusPort, host: '127.0.0.1' });
    await once(socket, 'connect');
    socket.setNoDelay(true);
    let answered = 0;
    let id = 0;
    const frame = () => {
      const header = Buffer.alloc(7);
      header.writeUInt16BE((id = (id % 0xffff) + 1), 0);
      header.writeUInt16BE(request.length + 1, 4);
      header[6] = 1;
      return Buffer.concat([header, request]);
    };
    await new Promise((resolve) => {
      let buffered = Buffer.alloc(0);
      socket.on('data', (chunk) => {
        buffered = Buffer.concat([buffered, chunk]);
        while (buffered.length >= 7 && buffered.length >= 6 + buffered.readUInt16BE(4)) {
          buffered = buffered.subarray(6 + buffered.readUInt16BE(4));
          answered++;
          if (performance.now() >= until) return resolve();
          socket.write(frame());
        }
      });
      socket.write(frame());
    });
    socket.destroy();
    return answered;
  }

  // The input, flipped from the simulator's own timer (simInputControl says why).
  let inputValue = 0;
  const control = sim.controlUrl;
  const { flip, lastChange } = simInputControl(control, INPUT);
  const ms = (from, to) => Number(to - from) / 1e6;

  /** Flips DI 1_01 one change at a time until `until`; the change → client times, and how many never came. */
  async function flips(until) {
    const changeToClient = [];
    const readToClient = [];
    let lost = 0;
    while (performance.now() < until) {
      inputValue ^= 1;
      const arrival = fromProbe.arrival(inputValue, WS_GIVE_UP_MS);
      // A random phase against the scan grid.
      await flip(inputValue, FLIP_AFTER_MS + Math.floor(Math.random() * (1000 / SCAN_HZ)));
      const at = await arrival;
      if (at === undefined) {
        lost++;
        continue;
      }
      const change = await lastChange();
      changeToClient.push(ms(change.at, at));
      if (change.read !== undefined) readToClient.push(ms(change.read, at));
      await sleep(10 + Math.random() * 20);
    }
    return { changeToClient, readToClient, lost };
  }

  async function phase(name, request) {
    const cpu0 = cpuSeconds(daemon.child.pid);
    const scans0 = await scans();
    probe.send({ begin: true });
    const started = performance.now();
    const until = started + SECONDS * 1000;
    const [answered, ws] = await Promise.all([
      request ? Promise.all(Array.from({ length: CLIENTS }, () => client(request, until))).then((counts) => counts.reduce((a, b) => a + b, 0)) : sleep(SECONDS * 1000).then(() => 0),
      flips(until),
    ]);
    const elapsed = (performance.now() - started) / 1000;
    const cpu = cpuSeconds(daemon.child.pid) - cpu0;
    const scans1 = await scans();
    probe.send({ end: true });
    const { rest, restErrors } = await fromProbe.next('rest');
    // What the flood left queued drains before the next phase starts.
    await sleep(500);
    return { name, cpu, elapsed, answered, scans: scans1.scans - scans0.scans, overruns: scans1.overruns - scans0.overruns, rest, restErrors, ...ws };
  }

  const read = (fc, address, quantity) => Buffer.from([fc, address >> 8, address & 0xff, quantity >> 8, quantity & 0xff]);
  const phases = [
    ['idle', undefined],
    ['cached', read(3, 0, 2)],
    ['passthrough', read(1, 1002, 2)],
  ];
  const loadBefore = loadavg()[0];
  const rounds = [];
  for (let round = 0; round < ROUNDS; round++) {
    const measured = [];
    for (const [name, request] of phases) measured.push(await phase(name, request));
    rounds.push(measured);
    process.stderr.write(`round ${round + 1}/${ROUNDS}: scans/s ${measured.map((r) => `${r.name} ${fmt(r.scans / r.elapsed, 1)}`).join(', ')}\n`);
  }

  // Each phase over all rounds.
  const results = phases.map(([name], i) => {
    const all = rounds.map((measured) => measured[i]);
    const sum = (key) => all.reduce((total, r) => total + r[key], 0);
    const elapsed = sum('elapsed');
    return {
      name,
      elapsed,
      cpu: sum('cpu'),
      answered: sum('answered'),
      cpuPercent: (100 * sum('cpu')) / elapsed,
      requestsPerS: sum('answered') / elapsed,
      scansPerS: sum('scans') / elapsed,
      scansPerSByRound: all.map((r) => r.scans / r.elapsed),
      overruns: sum('overruns'),
      rest: percentiles(all.flatMap((r) => r.rest)),
      restErrors: sum('restErrors'),
      ws: percentiles(all.flatMap((r) => r.changeToClient)),
      wsRead: percentiles(all.flatMap((r) => r.readToClient)),
      wsLost: sum('lost'),
    };
  });
  const idle = results[0];
  const cost = ['| phase | daemon CPU | requests/s | µs CPU per request (above idle) | scans/s |', '|---|---|---|---|---|'];
  for (const r of results) {
    const perRequest = r.answered > 0 ? ((r.cpu - (idle.cpu / idle.elapsed) * r.elapsed) / r.answered) * 1e6 : undefined;
    r.cpuMicrosPerRequest = perRequest;
    cost.push(`| ${r.name} | ${fmt(r.cpuPercent, 1)} % | ${fmt(r.requestsPerS)} | ${perRequest === undefined ? '–' : fmt(perRequest, 1)} | ${fmt(r.scansPerS, 1)} |`);
  }
  const ms2 = (value) => fmt(value, 2);
  const coexistence = [
    '| phase | scans/s | × quiet | × quiet by round | REST p50 / p99 ms | p99 × quiet | WS change → client p50 / p99 ms | p99 × quiet | WS read → client p50 / p99 ms | p99 × quiet |',
    '|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const r of results) {
    const byRound = r.scansPerSByRound.map((rate, round) => rate / idle.scansPerSByRound[round]);
    r.scanRatioByRound = byRound;
    coexistence.push(
      `| ${r.name} | ${fmt(r.scansPerS, 1)} | ${ratio(r.scansPerS, idle.scansPerS)} | ${fmt(Math.min(...byRound), 2)}–${fmt(Math.max(...byRound), 2)} | ${ms2(r.rest.p50)} / ${ms2(r.rest.p99)} | ${ratio(r.rest.p99, idle.rest.p99)} | ${ms2(r.ws.p50)} / ${ms2(r.ws.p99)} | ${ratio(r.ws.p99, idle.ws.p99)} | ${ms2(r.wsRead.p50)} / ${ms2(r.wsRead.p99)} | ${ratio(r.wsRead.p99, idle.wsRead.p99)} |`,
    );
  }
  const samples = results.map((r) => `${r.name}: ${r.overruns} scan slots skipped, ${r.rest.count} REST (${r.restErrors} failed), ${r.ws.count} WS changes (${r.wsLost} lost)`).join('; ');
  process.stdout.write(
    `${cost.join('\n')}\n\n${coexistence.join('\n')}\n\nsamples: ${samples}; load average ${fmt(loadBefore, 2)} before, ${fmt(loadavg()[0], 2)} after\n` +
      `${JSON.stringify({ bundle: values.bundle, clients: CLIENTS, seconds: SECONDS, rounds: ROUNDS, loadBefore, loadAfter: loadavg()[0], results })}\n`,
  );
  probe.kill();
  await stop(daemon.child);
  await stop(sim.child);
}

/**
 * What the probe process says, by kind: `next(kind)` the next reply of that
 * kind; `arrival(value, ms)` the moment DI 1_01's change to `value` reached
 * the WebSocket client (undefined if it did not within `ms`).
 */
function probeMessages(child) {
  const waiting = new Map();
  let expected;
  child.on('message', (message) => {
    if (message.probe === 'arrival') {
      if (expected && message.value === expected.value) {
        const { resolve } = expected;
        expected = undefined;
        resolve(BigInt(message.at));
      }
      return;
    }
    waiting.get(message.probe)?.(message);
    waiting.delete(message.probe);
  });
  child.on('exit', (code) => {
    if (code) {
      process.stderr.write(`the probe process exited with ${code}\n`);
      process.exit(1);
    }
  });
  return {
    next: (kind) => new Promise((resolve) => waiting.set(kind, resolve)),
    arrival: (value, ms) =>
      new Promise((resolve) => {
        const timer = setTimeout(() => {
          expected = undefined;
          resolve(undefined);
        }, ms);
        expected = { value, resolve: (at) => (clearTimeout(timer), resolve(at)) };
      }),
  };
}

/**
 * The light clients, in a process of their own: one GETting /rest/di/1_01
 * every REST_PERIOD_MS on a keep-alive connection, and one WebSocket client
 * that stamps each message before looking at it (a byte search, no parsing).
 */
function runProbe() {
  let rest = [];
  let restErrors = 0;
  let collecting = false;
  process.on('message', async (message) => {
    if (message.start) {
      const { httpPort } = message.start;
      const { default: WebSocket } = await import('ws');
      const markers = [0, 1].map((value) => Buffer.from(INPUT.marker(value)));
      const ws = new WebSocket(`ws://127.0.0.1:${httpPort}/ws`, { perMessageDeflate: false });
      ws.on('message', (data) => {
        const at = process.hrtime.bigint();
        for (const value of [0, 1]) if (data.includes(markers[value])) process.send({ probe: 'arrival', value, at: String(at) });
      });
      await once(ws, 'open');
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      const getOnce = () =>
        new Promise((resolve) => {
          const started = process.hrtime.bigint();
          const req = httpRequest({ host: '127.0.0.1', port: httpPort, path: '/rest/di/1_01', agent }, (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode === 200 ? Number(process.hrtime.bigint() - started) / 1e6 : undefined));
          });
          req.on('error', () => resolve(undefined));
          req.end();
        });
      process.send({ probe: 'ready' });
      for (;;) {
        const started = performance.now();
        const took = await getOnce();
        if (collecting) {
          if (took === undefined) restErrors++;
          else rest.push(took);
        }
        await sleep(Math.max(0, REST_PERIOD_MS - (performance.now() - started)));
      }
    } else if (message.begin) {
      rest = [];
      restErrors = 0;
      collecting = true;
    } else if (message.end) {
      collecting = false;
      process.send({ probe: 'rest', rest, restErrors });
    }
  });
}
