import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { startModbusServer, type ModbusServer } from '../../../src/api/modbus-server/server.js';
import { DEFAULT_MAX_REQUESTS_PER_SECOND, REQUESTS_PER_TURN } from '../../../src/api/modbus-server/request-pacer.js';
import { createLogger } from '../../../src/logging/log.js';
import type { Runtime } from '../../../src/runtime/runtime.js';
import { startRuntimeBehindProxy } from '../../helpers/proxied-runtime.js';
import { RawModbusClient, pdu } from '../../helpers/raw-modbus-client.js';

// Polling keeps its rate while ten Modbus TCP clients read as fast as they
// can: registers and coils that must come from the board (the server's
// requests take at most one place in the bus queue at a time), and registers
// answered from the poll cache, eight requests in flight per client (the
// server starts a few requests per turn of the event loop, so a poll's reply
// waits behind those few, not behind eighty). The board sits behind a proxy
// that delays each reply by LINE_MS, so the line has a cost. The whole test
// shares one process, as the daemon's parts share one event loop.

const LINE_MS = 3;
const SCAN_HZ = 20;
const WINDOW_MS = 750;
/** Quiet and loaded windows alternate, so a moment of load on the machine falls on both alike. */
const ROUNDS = 3;
const CLIENTS = 10;
/** Requests each client keeps in flight in the cached flood: the server reads on up to 8 waiting. */
const PIPELINE = 8;

interface Bench {
  runtime: Runtime;
  server: ModbusServer;
  clients: RawModbusClient[];
  close(): Promise<void>;
}

async function bench(maxRequestsPerSecond?: number): Promise<Bench> {
  const proxied = await startRuntimeBehindProxy(`{model: "00", slave-id: 1, scan_frequency: ${SCAN_HZ}}`, 'iogate-mbs-share-');
  proxied.proxy.delayMs.set(1, LINE_MS);
  const { runtime } = proxied;
  const log = createLogger('CRITICAL');
  const server = await startModbusServer(
    { enabled: true, address: '127.0.0.1', port: 0, maxAgeMs: 100, virtualUnit: 250, write: true, allow: [], maxRequestsPerSecond },
    runtime,
    log,
  );
  const clients = await Promise.all(Array.from({ length: CLIENTS }, () => RawModbusClient.connect(server.port)));
  return {
    runtime,
    server,
    clients,
    async close() {
      for (const client of clients) client.close();
      await server.stop();
      await proxied.stop();
    },
  };
}

/** Each client keeps `inFlight` requests of `request(n)` going until `stop()`; `answered()` counts the replies. */
function flood(clients: RawModbusClient[], request: (n: number) => Buffer, inFlight: number) {
  let running = true;
  const byClient = clients.map(() => 0);
  const loops = clients.flatMap((client, n) =>
    Array.from({ length: inFlight }, async () => {
      while (running) {
        await client.request(1, request(n), 10_000);
        byClient[n]!++;
      }
    }),
  );
  return {
    answered: () => byClient.reduce((a, b) => a + b, 0),
    byClient,
    stop: async () => {
      running = false;
      await Promise.all(loops);
    },
  };
}

/** Scans of the board in quiet windows and in windows under `load`, alternating, ROUNDS of each. */
async function scansQuietAndLoaded(t: TestContext, { runtime, server, clients }: Bench, request: (n: number) => Buffer, inFlight: number) {
  const slave = runtime.slaves[0]!;
  const scansIn = async (ms: number) => {
    const before = slave.stats.scans;
    await new Promise((resolve) => setTimeout(resolve, ms));
    return slave.stats.scans - before;
  };
  let quiet = 0;
  let loaded = 0;
  let answered = 0;
  for (let round = 0; round < ROUNDS; round++) {
    quiet += await scansIn(WINDOW_MS);
    const load = flood(clients, request, inFlight);
    loaded += await scansIn(WINDOW_MS);
    await load.stop();
    answered += load.answered();
  }
  t.diagnostic(
    `scans in ${ROUNDS} × ${WINDOW_MS} ms: ${quiet} quiet, ${loaded} with ${CLIENTS} clients; ${answered} client replies (${server.stats.cacheHits} from the cache, ${server.stats.passthroughs} sent on to the board)`,
  );
  return { quiet, loaded, answered };
}

test('polling keeps at least 90 % of its quiet rate with 10 clients reading the board through the server as fast as they can', async (t) => {
  const setup = await bench();
  try {
    const { quiet, loaded, answered } = await scansQuietAndLoaded(t, setup, (n) => (n % 2 === 0 ? pdu.read(2, 0, 4) : pdu.read(3, 1008, 4)), 1);
    assert.ok(answered > 50, `the clients were served (${answered} replies)`);
    assert.ok(setup.server.stats.passthroughs > 50, `their reads went to the board (${setup.server.stats.passthroughs})`);
    assert.ok(loaded >= 0.9 * quiet, `scans: ${quiet} quiet, ${loaded} under load`);
  } finally {
    await setup.close();
  }
});

test('polling keeps at least 90 % of its quiet rate with 10 clients reading the poll cache, 8 requests in flight each', async (t) => {
  // A rate the clients of this process reach even on a loaded machine, so the
  // bound is what holds them (unbounded, they took 28 of 44 scans' time).
  const setup = await bench(500);
  try {
    const { quiet, loaded, answered } = await scansQuietAndLoaded(t, setup, () => pdu.read(3, 0, 2), PIPELINE);
    assert.ok(setup.server.stats.cacheHits > 200, `the clients were served from the cache (${setup.server.stats.cacheHits} of ${answered} replies)`);
    assert.ok(loaded >= 0.9 * quiet, `scans: ${quiet} quiet, ${loaded} under load`);
  } finally {
    await setup.close();
  }
});

test('the server starts at most max_requests_per_second requests, its clients taking turns', async (t) => {
  const rate = 500;
  const setup = await bench(rate);
  const before = setup.server.stats.requests;
  const started = performance.now();
  const load = flood(setup.clients, () => pdu.read(3, 0, 2), PIPELINE);
  try {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    // Read before the time is taken: the count can only be low against it.
    const requests = setup.server.stats.requests - before;
    const seconds = (performance.now() - started) / 1000;
    const allowed = Math.round((rate * 20) / 1000) + rate * seconds + REQUESTS_PER_TURN;
    t.diagnostic(`${requests} requests in ${seconds.toFixed(3)} s (at most ${allowed.toFixed(0)}); by client: ${load.byClient.join(', ')}`);
    assert.ok(requests > 100, `the clients were served (${requests})`);
    assert.ok(requests <= allowed, `${requests} requests started in ${seconds.toFixed(3)} s, more than the bucket allows (${allowed.toFixed(0)})`);
    // One request per connection in turn: the clients, asking alike, are served alike.
    assert.ok(Math.min(...load.byClient) >= 0.5 * Math.max(...load.byClient), `served by client: ${load.byClient.join(', ')}`);
  } finally {
    await load.stop();
    await setup.close();
  }
});

test(`the server starts at most ${REQUESTS_PER_TURN} requests per turn of the event loop, however many clients pipeline`, async (t) => {
  // The default rate, with a burst of 40: the bucket alone would let a turn take them all.
  const setup = await bench();
  const load = flood(setup.clients, () => pdu.read(3, 0, 2), PIPELINE);
  try {
    // Sampled once per turn, from the loop's check phase as the server starts its requests there.
    let most = 0;
    let turns = 0;
    let last = setup.server.stats.requests;
    await new Promise<void>((resolve) => {
      const sample = (): void => {
        const now = setup.server.stats.requests;
        most = Math.max(most, now - last);
        last = now;
        turns++;
        if (now >= 1000) resolve();
        else setImmediate(sample);
      };
      setImmediate(sample);
    });
    t.diagnostic(`${setup.server.stats.requests} requests in ${turns} turns, at most ${most} in one (default rate ${DEFAULT_MAX_REQUESTS_PER_SECOND}/s)`);
    assert.ok(most >= 1, 'requests were served');
    assert.ok(most <= REQUESTS_PER_TURN, `at most ${REQUESTS_PER_TURN} requests started in one turn, not ${most}`);
  } finally {
    await load.stop();
    await setup.close();
  }
});
