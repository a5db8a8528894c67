import { closeSync, openSync, renameSync, utimesSync, writeFileSync, writeSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { count, sleep, type Target } from './common.js';
import { BASE_VARIANT, configText, type ConfigVariant, type PeerPorts } from './config.js';
import { MODBUS_TIMEOUT_MS } from './modbus-peer.js';
import type { Random } from './random.js';
import { SETTLE_MS } from '../../src/config/stable-file.js';

// The reload storm: while the other attacks run, the configuration is
// rewritten with each component's slice varied (MQTT, Sparkplug, the HTTP
// APIs and their access settings, the webhook, the buses, the 1-Wire bus, and
// interlocks and covers, whose change a reload must refuse whole) and
// SIGHUPs follow in bursts, so components are stopped and started again while
// clients, brokers and peers are busy with them. Most rewrites replace the
// file whole, dated in the past, so each SIGHUP applies it at once; some are
// fresh (the reload waits for the file to settle); some rewrite it in place,
// slowly, with SIGHUPs arriving meanwhile, which must never apply a prefix of
// it. A prefix without the `auth:` section would open anonymous writes (the
// configuration requires tokens even on loopback), so an anonymous write is
// tried after every rewrite and must always be refused. The daemon must not
// exit (daemon.ts watches it); run.ts checks afterwards that the last full
// file was applied and that the daemon still answers.

/** Where the webhook posts: answered at once, counted. */
async function webhookReceiver(target: Target): Promise<Server> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      count(target.counts, 'reload.webhook_posts');
      res.end('ok');
    });
  });
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return server;
}

function randomVariant(rng: Random, mqtt: boolean): ConfigVariant {
  return {
    mqttKeepalive: rng.int(20, 90),
    mqttQos: rng.chance(0.5) ? 1 : 0,
    homeassistant: rng.chance(0.7),
    sparkplug: mqtt && rng.chance(0.8),
    sparkplugKeepalive: rng.int(10, 60),
    websocketErrorReplies: rng.chance(0.5),
    panel: rng.chance(0.8),
    corsOrigin: rng.pick([undefined, 'https://a.example', 'https://b.example']),
    maxWebSocketClients: rng.pick([16, 32, 64]),
    webhook: rng.chance(0.5),
    webhookComplexEvents: rng.chance(0.5),
    extraSimBus: rng.chance(0.5),
    extraSimToggleMs: rng.pick([0, 100, 500]),
    modbusTimeoutMs: rng.pick([MODBUS_TIMEOUT_MS, MODBUS_TIMEOUT_MS + 50]),
    oneWireIntervalS: rng.pick([1, 2]),
    interlock: rng.chance(0.08),
    cover: rng.chance(0.08),
  };
}

/** The whole file at once (written beside it, renamed over it); `backdated`: dated a minute back, so a reload takes it at once. */
function replaceWhole(file: string, text: string, backdated: boolean): void {
  const temporary = `${file}.fuzz.tmp`;
  writeFileSync(temporary, text);
  if (backdated) {
    const past = new Date(Date.now() - 60_000);
    utimesSync(temporary, past, past);
  }
  renameSync(temporary, file);
}

function sighup(pid: number, target: Target): void {
  try {
    process.kill(pid, 'SIGHUP');
    count(target.counts, 'reload.sighups');
  } catch {
    // The daemon is gone: daemon.ts reports that.
  }
}

/** When the fuzzer itself (loaded like the daemon) last stalled mid-file for half the settle time or more. */
let stalledAt = -Infinity;

/** The file truncated and written again in small pieces, with SIGHUPs between them. */
async function rewriteInPlace(file: string, text: string, rng: Random, pid: number, target: Target): Promise<void> {
  const fd = openSync(file, 'w');
  let last = performance.now();
  try {
    for (let at = 0; at < text.length; ) {
      const piece = rng.int(16, 160);
      writeSync(fd, text.slice(at, at + piece));
      const now = performance.now();
      // Past the settle time a pause cannot be told from the end of the file (see stable-file.ts).
      if (now - last >= SETTLE_MS / 2) {
        stalledAt = now;
        count(target.counts, 'reload.writer_stalls');
      }
      last = now;
      at += piece;
      if (rng.chance(0.3)) sighup(pid, target);
      await sleep(rng.int(1, 12));
    }
  } finally {
    closeSync(fd);
  }
}

/** An anonymous write from loopback: refused (401) unless a configuration without `auth:` was applied. */
async function anonymousWrite(target: Target): Promise<void> {
  let status: number;
  try {
    const reply = await fetch(`http://127.0.0.1:${target.port}/rest/do/1_01`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: 'value=0',
      signal: AbortSignal.timeout(3000),
    });
    await reply.arrayBuffer();
    status = reply.status;
  } catch {
    count(target.counts, 'reload.anonymous_unanswered');
    return;
  }
  if (status >= 200 && status < 300) {
    // The documented limit: a writer that pauses longer than the settle time mid-file looks finished.
    if (performance.now() - stalledAt < 4 * SETTLE_MS) {
      count(target.counts, 'reload.anonymous_accepted_after_writer_stall');
      return;
    }
    throw new Error(`an anonymous write was accepted (${status}) during the reload storm: a half-written configuration was applied`);
  }
  count(target.counts, status === 401 ? 'reload.anonymous_refused' : `reload.anonymous_${status}`);
}

export interface ReloadStorm {
  /** Runs until the target stops; rejects on an accepted anonymous write. */
  done: Promise<void>;
  /** The ports the configuration was written with (the webhook receiver's included). */
  ports: PeerPorts;
  /** Writes the base configuration (fresh) and closes the webhook receiver. */
  finish(): Promise<void>;
}

export async function reloadAttack(target: Target, rng: Random, pid: number, file: string, peers: PeerPorts): Promise<ReloadStorm> {
  const receiver = await webhookReceiver(target);
  const ports: PeerPorts = { ...peers, webhook: (receiver.address() as AddressInfo).port };
  const mqtt = peers.mqtt !== undefined;
  const done = (async () => {
    while (!target.stopped()) {
      const text = configText(ports, randomVariant(rng, mqtt));
      const mode = rng.weighted([
        [75, 'replace'],
        [10, 'fresh'],
        [15, 'in-place'],
      ] as const);
      count(target.counts, `reload.${mode}`);
      if (mode === 'in-place') await rewriteInPlace(file, text, rng, pid, target);
      else replaceWhole(file, text, mode === 'replace');
      // A burst: one SIGHUP or several within a few milliseconds.
      for (let burst = rng.int(1, 4); burst > 0; burst--) {
        sighup(pid, target);
        if (burst > 1) await sleep(rng.int(0, 5));
      }
      await anonymousWrite(target);
      await sleep(rng.int(5, 150));
    }
  })();
  return {
    done,
    ports,
    async finish() {
      replaceWhole(file, configText(ports, BASE_VARIANT), false);
      const closed = new Promise<void>((resolve) => receiver.close(() => resolve()));
      receiver.closeAllConnections();
      await closed;
    },
  };
}
