#!/usr/bin/env node
// Abuse benchmark: hostile and broken clients against the built daemon
// (dist/iogate.js with the service unit's Node options, default limits,
// bench/config.yaml with the WebSocket on),
// while two normal loopback clients, each in a process of its own, send one
// GET every few milliseconds: one on a fresh connection each time (as curl or
// a script would), one on a kept-alive connection (as a poller would).
// For each attack: the share of the normal client's requests answered 200,
// its p50/p99 against a quiet baseline from the same run, and the daemon's
// peak RSS against its quiet peak.
//
//   node build.mjs && node bench/abuse.mjs
//
// Environment: ABUSE_DURATION (seconds per phase, default 8), ABUSE_ONLY
// (comma-separated attack names), ABUSE_BUNDLE (another dist/iogate.js to run
// instead of this build's), ABUSE_ROUNDS and ABUSE_COMPARE (see
// idle-keepalive-rounds below). Results go to bench/results/abuse.md and
// abuse.json. Everything targets 127.0.0.1 only.

import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { inheritedEnvironment, serviceEnvironment, serviceNodeOptions, tempDir, withPrivateState } from './common.mjs';

const BENCH_DIR = fileURLToPath(new URL('.', import.meta.url));
const BUNDLE = process.env.ABUSE_BUNDLE ?? fileURLToPath(new URL('../dist/iogate.js', import.meta.url));
const RESULTS = join(BENCH_DIR, 'results');
const DURATION_S = Number(process.env.ABUSE_DURATION ?? 8);
/** The normal client's pace: one request, then this pause. */
const NORMAL_PAUSE_MS = 10;
const NORMAL_TIMEOUT_MS = 5000;
const NEEDED_FDS = 24_000;
/** Rounds of each server in idle-keepalive-rounds. */
const ROUNDS = Number(process.env.ABUSE_ROUNDS ?? 3);
/** An older bundle to alternate with this build's in idle-keepalive-rounds (before/after in one run). */
const COMPARE_BUNDLE = process.env.ABUSE_COMPARE;

// ------------------------------------------------------------ normal client

/**
 * Runs in a child process so the attackers' work in this one does not colour
 * its timings. `keepAlive`: one connection reused for every request (as
 * Home Assistant or a SCADA poller holds it) instead of one per request.
 */
async function normalClient(port, seconds, keepAlive) {
  const agent = keepAlive ? new Agent({ keepAlive: true, maxSockets: 1 }) : false;
  const latencies = [];
  let sent = 0;
  let served = 0;
  const failures = {};
  const end = performance.now() + seconds * 1000;
  while (performance.now() < end) {
    sent++;
    const started = performance.now();
    const outcome = await new Promise((resolve) => {
      const req = request({ host: '127.0.0.1', port, path: '/rest/di/1_01', agent, timeout: NORMAL_TIMEOUT_MS }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode === 200 ? 'ok' : `status ${res.statusCode}`));
        res.on('error', (error) => resolve(error.code ?? error.message));
      });
      req.on('timeout', () => req.destroy(Object.assign(new Error('timeout'), { code: 'timeout' })));
      req.on('error', (error) => resolve(error.code ?? error.message));
      req.end();
    });
    if (outcome === 'ok') {
      served++;
      latencies.push(performance.now() - started);
    } else {
      failures[outcome] = (failures[outcome] ?? 0) + 1;
    }
    await sleep(NORMAL_PAUSE_MS);
  }
  latencies.sort((a, b) => a - b);
  const at = (q) => (latencies.length ? latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] : null);
  process.stdout.write(JSON.stringify({ sent, served, p50: at(0.5), p99: at(0.99), max: latencies.at(-1) ?? null, failures }));
}

function runNormalClient(port, seconds, keepAlive = false) {
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), '--normal-client', String(port), String(seconds), keepAlive ? 'keep-alive' : 'fresh'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let text = '';
  child.stdout.setEncoding('utf8').on('data', (chunk) => (text += chunk));
  // A client that could not report (it died, or could not even start under the attack) served nothing.
  return once(child, 'exit').then(([code, signal]) =>
    text ? JSON.parse(text) : { sent: 1, served: 0, p50: null, p99: null, max: null, failures: { [`client exited (${signal ?? code})`]: 1 } },
  );
}

// ------------------------------------------------------------ daemon

function rssMb(pid) {
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;
}

/** CPU time (user and system) a process has used so far, in ms. */
function cpuMs(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  // utime and stime are fields 14 and 15 of stat, in clock ticks (100 a second on Linux).
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

async function startDaemon(config, bundle = BUNDLE) {
  const nodeArgs = process.env.ABUSE_DAEMON_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  const child = spawn(process.execPath, [...serviceNodeOptions(), ...nodeArgs, bundle, '--config', withPrivateState(config), '--port', '0'], {
    env: { ...inheritedEnvironment(), ...serviceEnvironment() },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let output = '';
  const port = await new Promise((resolve, reject) => {
    child.stderr.setEncoding('utf8').on('data', (chunk) => {
      output += chunk;
      const match = /listening on http:\/\/[^\s]*:(\d+)/.exec(output);
      if (match) resolve(Number(match[1]));
    });
    child.once('exit', (code) => reject(new Error(`daemon exited with ${code}:\n${output}`)));
  });
  child.stderr.resume();
  // Let the first scans settle before anything is measured.
  await sleep(1000);
  return watched(child, port);
}

/** bench/bare-server.mjs answering the normal client's path with iogate's reply, on a free port; `nodeOptions`: the service unit's, or node's own. */
async function startBare(replyFrom, nodeOptions = process.env.ABUSE_BARE_OPTIONS === 'service') {
  const work = tempDir('iogate-abuse-bare-');
  const replies = join(work, 'replies.json');
  writeFileSync(replies, JSON.stringify({ '/rest/di/1_01': replyFrom, '/version': replyFrom }));
  const options = nodeOptions ? serviceNodeOptions() : [];
  const child = spawn(process.execPath, [...options, join(BENCH_DIR, 'bare-server.mjs'), '0', replies], { stdio: ['ignore', 'pipe', 'inherit'] });
  let output = '';
  const port = await new Promise((resolve, reject) => {
    child.stdout.setEncoding('utf8').on('data', (chunk) => {
      output += chunk;
      const match = /listening on (\d+)/.exec(output);
      if (match) resolve(Number(match[1]));
    });
    child.once('exit', (code) => reject(new Error(`bare server exited with ${code}`)));
  });
  return watched(child, port);
}

/** A server process listening on `port`, with its peak RSS sampled every 50 ms. */
function watched(child, port) {
  let peak = rssMb(child.pid);
  const sampler = setInterval(() => {
    try {
      peak = Math.max(peak, rssMb(child.pid));
    } catch {
      // exited
    }
  }, 50);
  return {
    port,
    pid: child.pid,
    peakRss: () => peak,
    cpuMs: () => cpuMs(child.pid),
    alive: () => child.exitCode === null && child.signalCode === null,
    async stop() {
      clearInterval(sampler);
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}

/** iogate's reply to the normal client's GET, for the bare server to send. */
function captureReply(port) {
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port, path: '/rest/di/1_01' }, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () => {
        const headers = { ...res.headers };
        delete headers.date;
        delete headers.connection;
        delete headers['keep-alive'];
        delete headers['transfer-encoding'];
        resolve({ headers, body: Buffer.concat(chunks).toString('base64') });
      });
    })
      .on('error', reject)
      .end();
  });
}

// ------------------------------------------------------------ attacks

/** Keeps `count` raw sockets alive: `setup` starts each, `tick` runs every `tickMs`; a closed one is replaced. */
function socketSwarm(port, count, { setup, tick, tickMs, reconnectMs = 100, localAddress }) {
  const sockets = new Set();
  let stopped = false;
  let opened = 0;
  let answered = 0;
  const open = () => {
    if (stopped) return;
    const socket = connect({ port, host: '127.0.0.1', localAddress });
    opened++;
    socket.on('error', () => undefined);
    let heard = false;
    socket.on('data', () => {
      if (!heard) answered++;
      heard = true;
    });
    socket.once('connect', () => setup(socket));
    socket.once('close', () => {
      sockets.delete(socket);
      if (!stopped) setTimeout(open, reconnectMs).unref();
    });
    sockets.add(socket);
  };
  // Opened in slices so the listen backlog is not the first thing to overflow.
  let started = 0;
  const starter = setInterval(() => {
    for (let i = 0; i < 200 && started < count; i++, started++) open();
    if (started >= count) clearInterval(starter);
  }, 20);
  const ticker = tick ? setInterval(() => sockets.forEach((socket) => socket.writable && tick(socket)), tickMs) : undefined;
  return {
    stats: () => ({ open: sockets.size, opened, answered }),
    stop() {
      stopped = true;
      clearInterval(starter);
      clearInterval(ticker);
      for (const socket of sockets) socket.destroy();
    },
  };
}

/** WebSocket clients that keep reconnecting; `start` drives each. */
function wsSwarm(port, count, start) {
  const clients = new Set();
  let stopped = false;
  let opened = 0;
  const closes = {};
  const open = () => {
    if (stopped) return;
    const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`);
    opened++;
    clients.add(ws);
    ws.on('error', () => undefined);
    ws.once('open', () => start(ws));
    ws.once('close', (code) => {
      closes[code] = (closes[code] ?? 0) + 1;
      clients.delete(ws);
      if (!stopped) setTimeout(open, 200).unref();
    });
  };
  for (let i = 0; i < count; i++) open();
  return {
    stats: () => ({ open: clients.size, opened, closes }),
    stop() {
      stopped = true;
      for (const ws of clients) ws.terminate();
    },
  };
}

/** One connection that writes pipelined GETs of a path that does not exist as fast as the socket takes them, reading the 404s. */
function pipelineFlood(port) {
  const request = Buffer.from('GET /no/such/path HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'.repeat(256));
  let stopped = false;
  let replies = 0;
  let socket;
  const open = () => {
    if (stopped) return;
    socket = connect({ port, host: '127.0.0.1' });
    socket.on('error', () => undefined);
    socket.on('data', (chunk) => {
      for (let at = chunk.indexOf('HTTP/1.1 404'); at !== -1; at = chunk.indexOf('HTTP/1.1 404', at + 1)) replies++;
    });
    const pump = () => {
      while (!stopped && socket.writable && socket.write(request));
    };
    socket.on('drain', pump);
    socket.once('connect', pump);
    socket.once('close', () => setTimeout(open, 100).unref());
  };
  open();
  return {
    stats: () => ({ replies }),
    stop() {
      stopped = true;
      socket.destroy();
    },
  };
}

// From a random place on, so that runs minutes apart do not reuse addresses whose ports still wait.
let floods = Math.floor(Math.random() * 250);
/**
 * Another loopback address for each flood, as another host on the LAN would
 * be: each phase leaves its 10,000 client ports in TIME_WAIT for a minute,
 * and a few phases from one address run out of ports.
 */
function anotherHost() {
  return `127.0.0.${2 + (floods++ % 250)}`;
}

/** 10,000 connections that each send one GET, then stay open and idle; closed ones come back after 500 ms. */
function idleKeepAlives(port, localAddress) {
  return socketSwarm(port, 10_000, {
    setup: (socket) => socket.write('GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'),
    reconnectMs: 500,
    localAddress,
  });
}

/** 60 WebSocket clients sending `all` every millisecond; `read: false` leaves their sockets unread. */
function allEveryMillisecond(port, { read }) {
  return wsSwarm(port, 60, (ws) => {
    if (!read) ws._socket.pause();
    const timer = setInterval(() => {
      if (ws.readyState !== WebSocket.OPEN) return clearInterval(timer);
      ws.send('{"cmd":"all"}');
    }, 1);
    ws.once('close', () => clearInterval(timer));
  });
}

/** The same attacks against the plainest node:http server, to show what the kernel and node:http alone allow. */
const BARE = Symbol('bare node:http server');

const ATTACKS = {
  'pipeline-404': {
    label: 'one connection pipelining 404s',
    start: (port) => pipelineFlood(port),
  },
  'ws-all-60': {
    label: '60 WebSocket clients send `all` every 1 ms and never read',
    start: (port) => allEveryMillisecond(port, { read: false }),
  },
  'ws-all-60-ignored': {
    label: '60 WebSocket clients send `all` every 1 ms and ignore the replies (TCP read, messages dropped)',
    start: (port) => allEveryMillisecond(port, { read: true }),
  },
  'ws-all-flood': {
    label: '8 WebSocket clients write `all` commands and never read',
    start: (port) =>
      wsSwarm(port, 8, (ws) => {
        ws._socket.pause(); // never reads a reply
        let n = 0;
        const pump = () => {
          if (ws.readyState !== WebSocket.OPEN) return;
          // 64 KB of distinct `all` commands, then more whenever the socket takes them.
          for (let bytes = 0; bytes < 64 * 1024; n++) {
            const frame = `{"cmd":"all","n":${n}}`;
            ws.send(frame);
            bytes += frame.length;
          }
          if (ws._socket.writableLength < 1024 * 1024) setTimeout(pump, 100).unref();
          else ws._socket.once('drain', pump);
        };
        pump();
      }),
  },
  'ws-bad-flood': {
    label: '4 WebSocket clients flood bad JSON and `set` for unknown circuits',
    start: (port) =>
      wsSwarm(port, 4, (ws) => {
        let n = 0;
        const pump = () => {
          if (ws.readyState !== WebSocket.OPEN) return;
          for (let i = 0; i < 500; i++, n++) ws.send(n % 2 ? `{"cmd":"set","dev":"relay","circuit":"9_${n}","value":1}` : '{"cmd": bad json');
          if (ws.bufferedAmount < 256 * 1024) setImmediate(pump);
          else setTimeout(pump, 5).unref();
        };
        pump();
      }),
  },
  slowloris: {
    label: '1,000 sockets sending their headers a byte at a time',
    start: (port) =>
      socketSwarm(port, 1000, {
        // A valid start, then one more byte of a header value per second: never a complete head.
        setup: (socket) => socket.write('GET /rest/all HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: '),
        tick: (socket) => socket.write('x'),
        tickMs: 1000,
      }),
  },
  'endless-bodies': {
    label: '300 POSTs with chunked bodies that never end',
    start: (port) =>
      socketSwarm(port, 300, {
        setup: (socket) =>
          socket.write('POST /rest/do/1_01 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nv\r\n'),
        tick: (socket) => socket.write('1\r\na\r\n'),
        tickMs: 1000,
      }),
  },
  'idle-keepalive': {
    label: '10,000 idle keep-alive connections (from another loopback address)',
    sockets: 10_000,
    start: (port) => idleKeepAlives(port, anotherHost()),
  },
  'idle-keepalive-bare': {
    label: '10,000 idle keep-alive connections (from another loopback address), against a bare node:http server',
    server: BARE,
    sockets: 10_000,
    start: (port) => idleKeepAlives(port, anotherHost()),
  },
  'idle-keepalive-rounds': {
    label: '10,000 idle keep-alive connections (from another loopback address), rounds alternating iogate and the bare server',
    rounds: true,
    sockets: 10_000,
    start: (port) => idleKeepAlives(port, anotherHost()),
  },
  'idle-keepalive-same-address': {
    label: '10,000 idle keep-alive connections from the clients\' own address',
    sockets: 10_000,
    start: (port) => idleKeepAlives(port),
  },
};

// ------------------------------------------------------------ phases

/**
 * One attack against a fresh server: the attack starts, reaches full strength
 * in 1.5 s, and the normal clients run meanwhile. The server's CPU time is
 * read at the attack's start and once every attacking socket had its first
 * answer (`ramp`: what it cost to take them in), and at the end.
 */
async function underAttack(server, attack) {
  const cpuAtStart = server.cpuMs();
  const startedAt = performance.now();
  const swarm = attack.start(server.port);
  let ramp;
  const target = attack.sockets;
  const watcher = target
    ? setInterval(() => {
        if (ramp || swarm.stats().answered < target) return;
        ramp = { ms: performance.now() - startedAt, cpuMs: server.cpuMs() - cpuAtStart };
        clearInterval(watcher);
      }, 20)
    : undefined;
  await sleep(1500); // the attack reaches full strength before measuring
  const [normal, kept] = await Promise.all([runNormalClient(server.port, DURATION_S), runNormalClient(server.port, DURATION_S, true)]);
  clearInterval(watcher);
  const cpuMs = server.cpuMs() - cpuAtStart;
  const attackers = swarm.stats();
  swarm.stop();
  const alive = server.alive();
  normal.peakRss = server.peakRss();
  await server.stop();
  return { normal, kept, attackers, alive, cpuMs, ramp };
}

const median = (values) => {
  const sorted = values.filter((value) => value !== null && value !== undefined).sort((a, b) => a - b);
  if (sorted.length === 0) return null;
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};

/**
 * The idle keep-alive flood, alternating iogate and the bare server (and an
 * older bundle, with ABUSE_COMPARE) round by round, so that machine load that
 * comes and goes falls on all of them alike.
 */
async function idleRounds(config, reply, attack) {
  const servers = [
    { name: 'iogate', start: () => startDaemon(config) },
    ...(COMPARE_BUNDLE ? [{ name: 'iogate (compared bundle)', start: () => startDaemon(config, COMPARE_BUNDLE) }] : []),
    { name: 'bare node:http', start: () => startBare(reply, false) },
    { name: 'bare node:http, service options', start: () => startBare(reply, true) },
  ];
  const runs = Object.fromEntries(servers.map(({ name }) => [name, []]));
  for (let round = 1; round <= ROUNDS; round++) {
    // Each round starts with another server, so none is always the first after a pause.
    const order = servers.map((_, i) => servers[(i + round - 1) % servers.length]);
    for (const { name, start } of order) {
      const result = await underAttack(await start(), attack);
      runs[name].push(result);
      // The kernel tears down the flood's 10,000 connections: not on the next server's time.
      await sleep(2000);
      const { normal, kept, ramp, cpuMs, attackers } = result;
      console.error(
        `  round ${round}, ${name}: fresh p99 ${fmt(normal.p99, 2)} ms (${normal.served}/${normal.sent}), keep-alive p99 ${fmt(kept.p99, 2)} ms (${kept.served}/${kept.sent}); ` +
          `ramp ${ramp ? `${fmt(ramp.ms, 0)} ms, ${fmt(ramp.cpuMs, 0)} ms CPU` : 'not finished'}; CPU in the phase ${fmt(cpuMs, 0)} ms; attackers ${JSON.stringify(attackers)}`,
      );
    }
  }
  return runs;
}

function idleRoundLines(runs) {
  const span = (values) => {
    const known = values.filter((value) => value !== null && value !== undefined);
    return known.length ? `${fmt(Math.min(...known), 1)}–${fmt(Math.max(...known), 1)}` : '–';
  };
  const served = (list, which) => {
    const sent = list.reduce((sum, run) => sum + run[which].sent, 0);
    const ok = list.reduce((sum, run) => sum + run[which].served, 0);
    return `${fmt((100 * ok) / sent, 1)} % (${ok}/${sent})`;
  };
  const lines = [
    '',
    `10,000 idle keep-alive connections from another loopback address, ${ROUNDS} rounds per server, alternating, each round starting with the next server (median, with the range over the rounds):`,
    '',
    '| server | served (new connection each) | p99 ms, median (range) | served (keep-alive) | p99 ms, median (range) | server CPU per flood connection answered, µs, median (range) | rounds in which all 10,000 were answered, median time ms |',
    '|---|---:|---:|---:|---:|---:|---:|',
  ];
  const summary = {};
  for (const [name, list] of Object.entries(runs)) {
    // A round in which the client got nothing counts as the worst, not as missing.
    const fresh = list.map((run) => run.normal.p99 ?? Infinity);
    const kept = list.map((run) => run.kept.p99 ?? Infinity);
    // The server's CPU over the whole phase (normal clients included, the same few hundred requests for every server) per flood connection it answered.
    const cpuEach = list.map((run) => (run.attackers.answered ? (1000 * run.cpuMs) / run.attackers.answered : null));
    const rampMs = list.map((run) => run.ramp?.ms ?? null);
    summary[name] = { fresh: median(fresh), kept: median(kept), cpuEach: median(cpuEach) };
    lines.push(
      `| ${name} | ${served(list, 'normal')} | ${fmt(median(fresh), 1)} (${span(fresh)}) | ${served(list, 'kept')} | ${fmt(median(kept), 1)} (${span(kept)}) ` +
        `| ${fmt(median(cpuEach), 0)} (${span(cpuEach)}) | ${list.filter((run) => run.ramp).length}/${list.length}, ${fmt(median(rampMs), 0)} |`,
    );
  }
  for (const bareName of Object.keys(runs).filter((name) => name.startsWith('bare'))) {
    const bare = summary[bareName];
    for (const name of Object.keys(runs).filter((name) => !name.startsWith('bare'))) {
      const ours = summary[name];
      const perRound = runs[name].map((run, i) => `${fmt((run.normal.p99 ?? Infinity) / (runs[bareName][i].normal.p99 ?? Infinity), 1)}×`);
      lines.push(
        '',
        `${name} against ${bareName}, medians: fresh connections p99 ${fmt(ours.fresh / bare.fresh, 2)}×, keep-alive ${fmt(ours.kept / bare.kept, 2)}×, ` +
          `CPU per flood connection answered ${fmt(ours.cpuEach / bare.cpuEach, 2)}× (fresh p99 round by round: ${perRound.join(', ')}).`,
      );
    }
  }
  return lines;
}

// ------------------------------------------------------------ main

function ensureDescriptors() {
  const soft = Number(execFileSync('sh', ['-c', 'ulimit -n'], { encoding: 'utf8' }).trim());
  if (soft >= NEEDED_FDS || process.env.ABUSE_FDS_RAISED) return false;
  const hard = execFileSync('sh', ['-c', 'ulimit -Hn'], { encoding: 'utf8' }).trim();
  const target = hard === 'unlimited' ? NEEDED_FDS : Math.min(NEEDED_FDS, Number(hard));
  if (target <= soft) return false;
  console.error(`raising the descriptor limit from ${soft} to ${target} (10,000 idle connections need them)`);
  const child = spawn('sh', ['-c', `ulimit -n ${target} && exec "$0" "$@"`, process.execPath, ...process.argv.slice(1)], {
    stdio: 'inherit',
    env: { ...process.env, ABUSE_FDS_RAISED: '1' },
  });
  child.on('exit', (code) => process.exit(code ?? 1));
  return true;
}

const fmt = (value, digits = 1) => (value === null || value === undefined ? '–' : value === Infinity ? 'none served' : value.toFixed(digits));

async function main() {
  if (ensureDescriptors()) return;
  const work = tempDir('iogate-abuse-');
  const config = join(work, 'config.yaml');
  writeFileSync(config, `${readFileSync(join(BENCH_DIR, 'config.yaml'), 'utf8')}\napis:\n  websocket:\n    enabled: true\n`);
  const only = process.env.ABUSE_ONLY?.split(',');

  console.error(`quiet baseline (${DURATION_S} s)`);
  const quietDaemon = await startDaemon(config);
  const [quiet, quietKept] = await Promise.all([runNormalClient(quietDaemon.port, DURATION_S), runNormalClient(quietDaemon.port, DURATION_S, true)]);
  quiet.peakRss = quietDaemon.peakRss();
  const reply = await captureReply(quietDaemon.port);
  await quietDaemon.stop();
  // The bare server's own quiet baseline, when a row runs against it.
  let bareQuiet;
  if (Object.entries(ATTACKS).some(([name, attack]) => (attack.server === BARE || attack.rounds) && (!only || only.includes(name)))) {
    console.error(`quiet baseline of the bare node:http server (${DURATION_S} s)`);
    const bare = await startBare(reply);
    const [fresh, kept] = await Promise.all([runNormalClient(bare.port, DURATION_S), runNormalClient(bare.port, DURATION_S, true)]);
    fresh.peakRss = bare.peakRss();
    bareQuiet = { fresh, kept };
    await bare.stop();
  }

  const rows = [];
  let idleRuns;
  for (const [name, attack] of Object.entries(ATTACKS)) {
    if (only && !only.includes(name)) continue;
    console.error(`${name}: ${attack.label} (${DURATION_S} s${attack.rounds ? ` a phase, ${ROUNDS} rounds` : ''})`);
    if (attack.rounds) {
      idleRuns = await idleRounds(config, reply, attack);
      continue;
    }
    const daemon = attack.server === BARE ? await startBare(reply) : await startDaemon(config);
    const { normal, kept, attackers, alive } = await underAttack(daemon, attack);
    rows.push({ name, label: attack.label, bare: attack.server === BARE, normal, kept, attackers, alive });
    console.error(
      `  fresh connections: served ${normal.served}/${normal.sent}, p99 ${fmt(normal.p99, 2)} ms; keep-alive: served ${kept.served}/${kept.sent}, p99 ${fmt(kept.p99, 2)} ms; peak RSS ${fmt(normal.peakRss)} MB; attackers ${JSON.stringify(attackers)}`,
    );
  }

  const share = (client) => (client.sent ? (100 * client.served) / client.sent : 0);
  const p99Ratio = (client, base) => (client.p99 && base.p99 ? client.p99 / base.p99 : null);
  const lines = [
    `Quiet baseline: fresh connections ${quiet.served}/${quiet.sent} served, p50 ${fmt(quiet.p50, 2)} ms, p99 ${fmt(quiet.p99, 2)} ms; ` +
      `keep-alive ${quietKept.served}/${quietKept.sent}, p50 ${fmt(quietKept.p50, 2)} ms, p99 ${fmt(quietKept.p99, 2)} ms; peak RSS ${fmt(quiet.peakRss)} MB.`,
    '',
    '| attack | served (new connection each) | p50 / p99 ms | p99 / quiet | served (keep-alive) | p50 / p99 ms | p99 / quiet | peak RSS MB | RSS / quiet | verdict |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---|',
  ];
  if (bareQuiet) {
    lines.splice(
      1,
      0,
      `Bare node:http server, quiet: fresh connections p99 ${fmt(bareQuiet.fresh.p99, 2)} ms, keep-alive p99 ${fmt(bareQuiet.kept.p99, 2)} ms; its rows are measured against this baseline.`,
    );
  }
  for (const { label, bare, normal, kept, alive } of rows) {
    const [freshBase, keptBase, rssBase] = bare ? [bareQuiet.fresh, bareQuiet.kept, bareQuiet.fresh.peakRss] : [quiet, quietKept, quiet.peakRss];
    const rssRatio = normal.peakRss / rssBase;
    const ok = (client, base) => share(client) >= 99 && p99Ratio(client, base) !== null && p99Ratio(client, base) <= 10;
    const pass = alive && ok(normal, freshBase) && ok(kept, keptBase) && rssRatio <= 1.5;
    lines.push(
      `| ${label} | ${fmt(share(normal), 1)} % (${normal.served}/${normal.sent}) | ${fmt(normal.p50, 2)} / ${fmt(normal.p99, 2)} | ${fmt(p99Ratio(normal, freshBase), 2)}× ` +
        `| ${fmt(share(kept), 1)} % (${kept.served}/${kept.sent}) | ${fmt(kept.p50, 2)} / ${fmt(kept.p99, 2)} | ${fmt(p99Ratio(kept, keptBase), 2)}× ` +
        `| ${fmt(normal.peakRss)} | ${fmt(rssRatio, 2)}× | ${pass ? 'pass' : '**miss**'} |`,
    );
  }
  // Where the kernel sets the limit, iogate is held to what a bare server gets under the same attack.
  const idle = rows.find((row) => row.name === 'idle-keepalive');
  const bareIdle = rows.find((row) => row.name === 'idle-keepalive-bare');
  if (idle && bareIdle) {
    lines.push(
      '',
      `10,000 idle keep-alive connections, iogate against the bare node:http server in the same run: p99 of fresh connections ` +
        `${fmt(idle.normal.p99, 2)} / ${fmt(bareIdle.normal.p99, 2)} ms = ${fmt(idle.normal.p99 / bareIdle.normal.p99, 2)}×; ` +
        `keep-alive ${fmt(idle.kept.p99, 2)} / ${fmt(bareIdle.kept.p99, 2)} ms = ${fmt(idle.kept.p99 / bareIdle.kept.p99, 2)}×.`,
    );
  }
  if (idleRuns) lines.push(...idleRoundLines(idleRuns));
  const table = lines.join('\n');
  console.log(table);
  if (process.env.ABUSE_BUNDLE) return; // a comparison run does not replace the results of this build
  writeFileSync(join(RESULTS, 'abuse.md'), `${table}\n`);
  writeFileSync(join(RESULTS, 'abuse.json'), `${JSON.stringify({ durationS: DURATION_S, quiet, quietKept, rows, idleRuns }, null, 2)}\n`);
}

if (process.argv[2] === '--normal-client') {
  await normalClient(Number(process.argv[3]), Number(process.argv[4]), process.argv[5] === 'keep-alive');
} else {
  await main();
}
