import { randomInt } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { ChildProcess } from 'node:child_process';
import { ADMIN_TOKEN, LOGIN_PASSWORD, READ_TOKEN, sleep, type Counters, type Peer, type Target } from './common.js';
import { writeConfig, writeTlsConfig } from './config.js';
import { BUNDLE, startDaemon, type WatchedDaemon } from './daemon.js';
import { httpAttack } from './http-attack.js';
import { loginAttack } from './login-attack.js';
import { hostileModbusPeer } from './modbus-peer.js';
import { modbusServerAttack } from './modbus-server-attack.js';
import { mosquittoInstalled, startMosquitto, type Broker } from './mosquitto.js';
import { mqttAttack, publishHugeCommand } from './mqtt-attack.js';
import { hostileOwserver } from './owserver-peer.js';
import { Random } from './random.js';
import { reloadAttack, type ReloadStorm } from './reload-attack.js';
import { Supervisor } from './supervisor.js';
import { tlsAttack } from './tls-attack.js';
import { wsAttack } from './ws-attack.js';

// `npm run fuzz -- --seconds N [--seed S]`: the built daemon under raw HTTP,
// WebSocket and MQTT attacks, polling a hostile Modbus TCP slave and a hostile
// owserver, while a supervising client polls it as a SCADA would; and a
// second daemon serving HTTPS under hostile TLS handshakes, polled over HTTPS
// by a supervising client of its own. See
// docs/testing.md "Fuzzing" for what fails a run and how to replay one.
//
// Phases: quiet (the supervising client alone; RSS measured), attack (all at
// once, for --seconds), settle (attackers stopped; RSS measured again), and
// the huge MQTT command (its own memory check, last, so what it leaves does
// not blur the others). Every process started here is stopped by its PID,
// also when the run fails or is interrupted.

const USAGE = `npm run fuzz -- [--seconds N] [--seed S] [--daemon dist/iogate.js] [--mqtt-huge-mb M] [--no-mqtt] [--no-reload] [--no-tls]
  --seconds N       length of the attack phase (default 60)
  --seed S          replay a run: the seed a run printed (default: a new one)
  --daemon FILE     the bundle to fuzz (default dist/iogate.js; build with npm run build)
  --mqtt-huge-mb M  size of the one huge MQTT command at the end (default 50; 0: skip that check)
  --no-mqtt         without Mosquitto (no MQTT attack, no huge command)
  --no-reload       without the reload storm (the configuration is never rewritten)
  --no-tls          without the second daemon (HTTPS) and its TLS handshake attack
`;

const QUIET_MS = 4000;
const SETTLE_MS = 6000;
/** Answered share the supervising client needs during the attack. */
const SUPERVISOR_MIN = 0.99;
/** RSS bounds against the quiet RSS: peak during the attack, and after it settled. */
const PEAK_RSS_FACTOR = 4;
const SETTLED_RSS_FACTOR = 1.5;
/**
 * Open descriptors after the attack settled, above the quiet count: the
 * attackers have closed their connections, so the daemon holds only what it
 * held before (listeners, its buses, the supervising client) and a few in
 * passing. A connection the daemon never lets go of shows here long before
 * its memory crosses the RSS bounds.
 */
const SETTLED_FD_MARGIN = 24;
/** RSS bound of the huge MQTT command against the RSS just before it (issue 27: within 1.5x quiet). */
const MQTT_HUGE_RSS_FACTOR = 1.5;
/** After the reload storm, how long the last reload (of a file written fresh, so it must settle first) may take. */
const LAST_RELOAD_MS = 20_000;
/** The name the TLS daemon's self-signed certificate is checked for (it covers the machine's names, localhost among them). */
const TLS_SERVERNAME = 'localhost';

/** Large MQTT payloads in the attack mix, bytes per second of attack. */
const MQTT_LARGE_BYTES_PER_S = 512 * 1024;

/** Where the daemon's Modbus TCP server listens (port 0 in the configuration: it logs the port it got). */
function modbusServerPort(daemon: WatchedDaemon): number {
  const port = /Modbus TCP server listening on 127\.0\.0\.1:(\d+)/.exec(daemon.output())?.[1];
  if (port === undefined) throw new Error('the daemon did not say where its Modbus TCP server listens');
  return Number(port);
}

interface Check {
  name: string;
  ok: boolean;
  detail: string;
}

function parse(): { seconds: number; seed: number; daemon: string; hugeMb: number; mqtt: boolean; reload: boolean; tls: boolean } {
  const { values } = parseArgs({
    options: {
      seconds: { type: 'string', default: '60' },
      seed: { type: 'string' },
      daemon: { type: 'string', default: BUNDLE },
      'mqtt-huge-mb': { type: 'string', default: '50' },
      'no-mqtt': { type: 'boolean', default: false },
      'no-reload': { type: 'boolean', default: false },
      'no-tls': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(USAGE);
    process.exit(0);
  }
  const seconds = Number(values.seconds);
  const seed = values.seed === undefined ? randomInt(0, 2 ** 32 - 1) : Number(values.seed);
  const hugeMb = Number(values['mqtt-huge-mb']);
  if (!(seconds > 0) || !Number.isInteger(seed) || seed < 0 || !(hugeMb >= 0)) {
    process.stderr.write(USAGE);
    process.exit(2);
  }
  return { seconds, seed, daemon: values.daemon!, hugeMb, mqtt: !values['no-mqtt'], reload: !values['no-reload'], tls: !values['no-tls'] };
}

function say(message: string): void {
  process.stderr.write(`fuzz: ${message}\n`);
}

function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

function median(values: number[]): number {
  return percentile(values, 50);
}

/** RSS samples every `everyMs` until `ms` passed or `stop()` says so; the samples, in MB. */
async function sampleRss(daemon: WatchedDaemon, ms: number, everyMs: number, stop: () => boolean = () => false): Promise<number[]> {
  const samples: number[] = [];
  const until = Date.now() + ms;
  while (Date.now() < until && !stop()) {
    const rss = daemon.rssMb();
    if (rss !== undefined) samples.push(rss);
    await sleep(everyMs);
  }
  return samples;
}

async function metricsText(port: number): Promise<string> {
  const response = await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { Authorization: `Bearer ${READ_TOKEN}` }, signal: AbortSignal.timeout(5000) });
  return response.text();
}

async function main(): Promise<number> {
  const options = parse();
  const { seconds, seed } = options;
  say(`seed ${seed}; replay with: npm run fuzz -- --seconds ${seconds} --seed ${seed}`);
  const root = new Random(seed);
  const counts: Counters = {};
  const checks: Check[] = [];
  const children: ChildProcess[] = [];
  const peers: Peer[] = [];
  let failure: string | undefined;
  let attackStartedAt = 0;
  const fail = (reason: string) => {
    if (failure) return;
    const at = attackStartedAt ? ` ${((performance.now() - attackStartedAt) / 1000).toFixed(1)} s into the attack` : ' before the attack';
    failure = `${reason}${at}`;
    say(`FAILURE: ${failure}`);
  };

  // Whatever happens, every process started here is stopped, by its PID. Registered before the
  // first temp dir is made, so at exit the processes are gone before tempDir's hook removes their files.
  const killAll = () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null && child.pid) process.kill(child.pid, 'SIGKILL');
  };
  process.on('exit', killAll);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      say(`${signal}: stopping`);
      killAll();
      process.exit(130);
    });
  }

  let broker: Broker | undefined;
  let daemon: WatchedDaemon | undefined;
  let supervisor: Supervisor | undefined;
  let tlsDaemon: WatchedDaemon | undefined;
  let tlsSupervisor: Supervisor | undefined;
  try {
    if (options.mqtt && !mosquittoInstalled()) {
      throw new Error('mosquitto is not installed (apt-get install mosquitto, or .ci/interop-deps.sh); --no-mqtt runs without it');
    }
    const modbus = hostileModbusPeer(root.fork('modbus-peer'), counts);
    const owserver = hostileOwserver(root.fork('owserver-peer'), counts);
    peers.push(modbus, owserver);
    const modbusPort = await modbus.listen();
    const owserverPort = await owserver.listen();
    if (options.mqtt) {
      broker = await startMosquitto();
      children.push(broker.child);
      broker.child.once('exit', (code, signal) => fail(`mosquitto exited with ${code ?? signal}`));
      say(`mosquitto pid ${broker.child.pid} on port ${broker.port}`);
    }
    const ports = { modbus: modbusPort, owserver: owserverPort, mqtt: broker?.port };
    const { dir, file } = writeConfig(ports);
    say(`daemon config ${file}`);
    daemon = await startDaemon(options.daemon, file, dir, fail);
    children.push(daemon.child);
    if (options.tls) {
      // The second daemon: HTTPS only, for the TLS handshake attack; any exit or crash line fails the run as for the first.
      const tls = writeTlsConfig();
      say(`TLS daemon config ${tls.file}`);
      tlsDaemon = await startDaemon(options.daemon, tls.file, tls.dir, (reason) => fail(`TLS daemon: ${reason}`));
      children.push(tlsDaemon.child);
      tlsSupervisor = new Supervisor(tlsDaemon.port, { ca: readFileSync(tls.cert), servername: TLS_SERVERNAME });
    }

    // Quiet: the supervising client alone.
    supervisor = new Supervisor(daemon.port);
    const quietRss = median(await sampleRss(daemon, QUIET_MS, 250, () => failure !== undefined));
    const quietFds = daemon.openFiles() ?? 0;
    say(`quiet RSS ${quietRss.toFixed(1)} MB, ${quietFds} open descriptors`);
    supervisor.reset();
    tlsSupervisor?.reset();

    // Attack.
    let stopped = false;
    const target: Target = { port: daemon.port, stopped: () => stopped || failure !== undefined, counts };
    const tlsTarget: Target | undefined = tlsDaemon ? { ...target, port: tlsDaemon.port } : undefined;
    attackStartedAt = performance.now();
    const storm: ReloadStorm | undefined = options.reload ? await reloadAttack(target, root.fork('reload'), daemon.child.pid!, file, ports) : undefined;
    const attacks = [
      httpAttack(target, root.fork('http'), 12),
      wsAttack(target, root.fork('ws'), 8),
      loginAttack(target, root.fork('login'), 3, fail),
      modbusServerAttack(target, modbusServerPort(daemon), root.fork('modbus-server'), 6),
      ...(broker ? [mqttAttack(target, root.fork('mqtt'), broker.port, 2, seconds * MQTT_LARGE_BYTES_PER_S)] : []),
      ...(storm ? [storm.done] : []),
      ...(tlsTarget ? [tlsAttack(tlsTarget, root.fork('tls'), 4)] : []),
    ].map((attack) => attack.catch((error: Error) => fail(`an attacker stopped: ${error.message}`)));
    const deadline = performance.now() + seconds * 1000;
    let peakRss = quietRss;
    let lastReport = performance.now();
    while (performance.now() < deadline && !failure) {
      peakRss = Math.max(peakRss, daemon.rssMb() ?? 0);
      if (performance.now() - lastReport >= 30_000) {
        lastReport = performance.now();
        const r = supervisor.result;
        say(`${Math.round((performance.now() - attackStartedAt) / 1000)} s: supervisor ${r.answered}/${r.sent}, RSS ${daemon.rssMb()?.toFixed(1)} MB (peak ${peakRss.toFixed(1)}), ${summary(counts)}`);
      }
      await sleep(250);
    }
    stopped = true;
    await Promise.race([Promise.all(attacks), sleep(15_000)]);
    const attackSeconds = (performance.now() - attackStartedAt) / 1000;
    const attacked = { ...supervisor.result, latencies: [...supervisor.result.latencies], failures: { ...supervisor.result.failures } };
    const tlsAttacked = tlsSupervisor && { ...tlsSupervisor.result, latencies: [...tlsSupervisor.result.latencies], failures: { ...tlsSupervisor.result.failures } };

    if (storm) {
      // The storm is over: the first configuration again, written fresh; one SIGHUP must apply it.
      await storm.finish();
      if (!failure) checks.push(await lastReloadApplied(daemon));
    }

    if (!failure) {
      // Settle: attackers gone; the supervising client still polls.
      const settledRss = median((await sampleRss(daemon, SETTLE_MS, 250)).slice(-8));
      const settledFds = daemon.openFiles() ?? Infinity;
      const share = attacked.sent === 0 ? 0 : attacked.answered / attacked.sent;
      checks.push({
        name: 'supervising client',
        ok: share >= SUPERVISOR_MIN,
        detail: `${attacked.answered} of ${attacked.sent} answered (${(share * 100).toFixed(2)} %, need ${SUPERVISOR_MIN * 100} %), p50 ${percentile(attacked.latencies, 50).toFixed(1)} ms, p99 ${percentile(attacked.latencies, 99).toFixed(1)} ms${Object.keys(attacked.failures).length ? `, not answered: ${JSON.stringify(attacked.failures)}` : ''}`,
      });
      if (tlsAttacked) {
        const tlsShare = tlsAttacked.sent === 0 ? 0 : tlsAttacked.answered / tlsAttacked.sent;
        checks.push({
          name: 'supervising client over HTTPS (TLS daemon)',
          ok: tlsShare >= SUPERVISOR_MIN,
          detail: `${tlsAttacked.answered} of ${tlsAttacked.sent} answered (${(tlsShare * 100).toFixed(2)} %, need ${SUPERVISOR_MIN * 100} %), p50 ${percentile(tlsAttacked.latencies, 50).toFixed(1)} ms, p99 ${percentile(tlsAttacked.latencies, 99).toFixed(1)} ms${Object.keys(tlsAttacked.failures).length ? `, not answered: ${JSON.stringify(tlsAttacked.failures)}` : ''}`,
        });
        const renegotiated = counts['tls.renegotiation_renegotiated'] ?? 0;
        checks.push({
          name: 'TLS: no renegotiation accepted',
          ok: renegotiated === 0 && (counts['tls.renegotiation_refused'] ?? 0) > 0,
          detail: `${counts['tls.renegotiation_refused'] ?? 0} refused, ${renegotiated} accepted; handshake episodes: ${['garbage', 'truncated', 'drip', 'renegotiate', 'junk-after-handshake', 'plain'].map((kind) => `${kind} ${counts[`tls.${kind}`] ?? 0}`).join(', ')}`,
        });
      }
      checks.push({
        name: 'login: forged cookies refused, episodes',
        ok: (counts['login.forged_refused'] ?? 0) > 0,
        detail: `${counts['login.forged_refused'] ?? 0} forged-cookie writes refused, ${counts['login.logged_in'] ?? 0} correct logins (${counts['login.good_login_refused'] ?? 0} slowed or busy); episodes: ${['bad-login', 'forged-read', 'forged-write', 'logout', 'good-login'].map((kind) => `${kind} ${counts[`login.${kind}`] ?? 0}`).join(', ')}; statuses: ${Object.keys(counts).filter((key) => key.startsWith('login.status_')).sort().map((key) => `${key.slice(13)} ${counts[key]}`).join(', ')}`,
      });
      const leaked = [daemon, tlsDaemon].some((watched) => watched?.output().includes(LOGIN_PASSWORD));
      checks.push({ name: "login: the password never in the daemon's output", ok: !leaked, detail: leaked ? 'it appears in the output' : 'absent' });
      checks.push({
        name: 'RSS peak under attack',
        ok: peakRss <= quietRss * PEAK_RSS_FACTOR,
        detail: `${peakRss.toFixed(1)} MB, bound ${(quietRss * PEAK_RSS_FACTOR).toFixed(1)} MB (${PEAK_RSS_FACTOR}x quiet ${quietRss.toFixed(1)} MB)`,
      });
      checks.push({
        name: 'RSS after the attack settled',
        ok: settledRss <= quietRss * SETTLED_RSS_FACTOR,
        detail: `${settledRss.toFixed(1)} MB, bound ${(quietRss * SETTLED_RSS_FACTOR).toFixed(1)} MB (${SETTLED_RSS_FACTOR}x quiet)`,
      });
      checks.push({
        name: 'open descriptors after the attack settled',
        ok: settledFds <= quietFds + SETTLED_FD_MARGIN,
        detail: `${settledFds}, bound ${quietFds + SETTLED_FD_MARGIN} (quiet ${quietFds} + ${SETTLED_FD_MARGIN})`,
      });
    }

    if (!failure && broker && options.hugeMb > 0) {
      // The huge command, alone: RSS against what it was just before.
      const before = median(await sampleRss(daemon, 2000, 250));
      let peak = before;
      const watched = daemon;
      const sampler = setInterval(() => (peak = Math.max(peak, watched.rssMb() ?? 0)), 100);
      const { acked } = await publishHugeCommand(broker.port, options.hugeMb * 1024 * 1024);
      const after = median(await sampleRss(daemon, 5000, 250));
      clearInterval(sampler);
      checks.push({
        name: `MQTT: one ${options.hugeMb} MB command (separate check)`,
        ok: peak <= before * MQTT_HUGE_RSS_FACTOR && after <= before * MQTT_HUGE_RSS_FACTOR,
        detail: `RSS before ${before.toFixed(1)} MB, peak ${peak.toFixed(1)} MB, 5 s after ${after.toFixed(1)} MB; bound ${(before * MQTT_HUGE_RSS_FACTOR).toFixed(1)} MB (${MQTT_HUGE_RSS_FACTOR}x before); ${acked ? 'answered on the ack topic' : 'no ack within 15 s'}`,
      });
    }

    // What the daemon counted, then an orderly stop.
    if (!failure) {
      const metrics = await metricsText(daemon.port).catch((error: Error) => `unavailable: ${error.message}`);
      const socketErrors = [...metrics.matchAll(/^iogate_http_socket_errors_total\{code="(\w+)"\} (\d+)$/gm)].filter(([, , n]) => n !== '0').map(([, code, n]) => `${code} ${n}`);
      say(`daemon counted socket errors: ${socketErrors.join(', ') || 'none (or no such metric in this build)'}`);
      // Directory listings from the hostile owserver add devices, up to the bus's cap: part of what RSS grows by.
      say(`1-Wire devices the daemon holds: ${/^iogate_owbus_sensors\{bus="OW"\} (\d+)$/m.exec(metrics)?.[1] ?? 'unknown'}`);
    }
    supervisor.stop().catch(() => undefined);
    supervisor = undefined;
    const code = await daemon.stop();
    if (!failure) checks.push({ name: 'orderly stop', ok: code === 0, detail: `SIGTERM: exit ${code}` });
    if (tlsDaemon) {
      tlsSupervisor?.stop().catch(() => undefined);
      tlsSupervisor = undefined;
      const tlsCode = await tlsDaemon.stop();
      if (!failure) checks.push({ name: 'orderly stop (TLS daemon)', ok: tlsCode === 0, detail: `SIGTERM: exit ${tlsCode}` });
    }
    say(`attack ran ${attackSeconds.toFixed(1)} s; ${summary(counts)}`);
    say(`all counts: ${JSON.stringify(Object.fromEntries(Object.entries(counts).sort()))}`);
  } catch (error) {
    fail(`the fuzzer could not run: ${(error as Error).message}`);
  } finally {
    await supervisor?.stop().catch(() => undefined);
    await tlsSupervisor?.stop().catch(() => undefined);
    await daemon?.stop().catch(() => undefined);
    await tlsDaemon?.stop().catch(() => undefined);
    if (broker && broker.child.exitCode === null) {
      broker.child.removeAllListeners('exit');
      const exited = new Promise((resolve) => broker!.child.once('exit', resolve));
      process.kill(broker.child.pid!, 'SIGTERM');
      await Promise.race([exited, sleep(5000)]);
    }
    killAll();
    await Promise.all(peers.map((peer) => peer.close()));
  }

  if (failure && daemon) {
    say(`daemon stderr (last lines):\n${daemon.output().split('\n').slice(-40).join('\n')}`);
  }
  if (failure && tlsDaemon) {
    say(`TLS daemon stderr (last lines):\n${tlsDaemon.output().split('\n').slice(-20).join('\n')}`);
  }
  for (const check of checks) say(`${check.ok ? 'PASS' : 'FAIL'} ${check.name}: ${check.detail}`);
  const ok = !failure && checks.every((check) => check.ok);
  say(`${ok ? 'PASSED' : 'FAILED'} (seed ${seed}${failure ? `: ${failure}` : ''})`);
  return ok ? 0 : 1;
}

/**
 * After the storm: the first configuration again, written fresh, and one
 * reload asked for over HTTP, whose answer is the outcome of a reload that
 * read the file after it was written (a SIGHUP's outcome could not be told
 * from that of a reload still running).
 */
async function lastReloadApplied(daemon: WatchedDaemon): Promise<Check> {
  const name = 'reload storm: the last configuration applied';
  const started = performance.now();
  try {
    const reply = await fetch(`http://127.0.0.1:${daemon.port}/config/reload`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${ADMIN_TOKEN}` },
      signal: AbortSignal.timeout(LAST_RELOAD_MS),
    });
    const body = await reply.text();
    const took = ((performance.now() - started) / 1000).toFixed(1);
    return { name, ok: reply.status === 200, detail: `${reply.status} after ${took} s${reply.status === 200 ? '' : `: ${body.slice(0, 300)}`}` };
  } catch (error) {
    return { name, ok: false, detail: `no answer within ${LAST_RELOAD_MS / 1000} s: ${(error as Error).message}` };
  }
}

/** The counters worth a glance, in one line. */
function summary(counts: Counters): string {
  const keys = ['http.connections', 'http.requests', 'http.responses', 'ws.connections', 'ws.accepted', 'ws.refused', 'ws.frames', 'ws.reset_mid_frame', 'mqtt.publishes', 'mqtt.large_publishes', 'mqtt.acks', 'modbus.replies', 'owserver.replies', 'reload.sighups', 'reload.anonymous_refused', 'tls.closed_by_daemon', 'tls.renegotiation_refused', 'login.bad-login', 'login.logged_in', 'login.forged_refused'];
  return keys.map((key) => `${key} ${counts[key] ?? 0}`).join(', ');
}

main().then(
  (code) => process.exit(code),
  (error: Error) => {
    process.stderr.write(`fuzz: ${error.stack ?? error.message}\n`);
    process.exit(1);
  },
);
