import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { startModbusServer } from '../../../src/api/modbus-server/server.js';
import { brain00 } from '../../../src/boards/builtin/neuron.js';
import { createLogger } from '../../../src/logging/log.js';
import { SimulatedBoard } from '../../../src/sim/simulated-board.js';
import { modbusTcpServer } from '../../../src/sim/tcp-server.js';
import { FaultyProxy } from '../../helpers/faulty-proxy.js';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { findModel } from '../../../src/boards/resolve.js';
import { loadConfig } from '../../../src/config/load.js';
import { buildRuntime } from '../../../src/runtime/runtime.js';
import { confinedYaml } from '../../helpers/confined-config.js';
import { tempDir } from '../../helpers/temp-dir.js';
import { RawModbusClient, pdu } from '../../helpers/raw-modbus-client.js';

// Polling keeps its rate while ten Modbus TCP clients read as fast as they
// can registers and coils that must come from the board: the server's
// requests take at most one place in the bus queue at a time. The board sits
// behind a proxy that delays each reply by LINE_MS, so the line has a cost.

const LINE_MS = 3;
const SCAN_HZ = 20;
const WINDOW_MS = 1500;

test('polling keeps at least 90 % of its quiet rate with 10 clients reading as fast as they can', async (t) => {
  const board = new SimulatedBoard(brain00);
  const sim = modbusTcpServer(new Map([[1, board]])).listen(0, '127.0.0.1');
  await once(sim, 'listening');
  const proxy = await FaultyProxy.start({ host: '127.0.0.1', port: (sim.address() as AddressInfo).port });
  proxy.delayMs.set(1, LINE_MS);
  const file = join(tempDir('iogate-mbs-share-'), 'config.yaml');
  writeFileSync(
    file,
    confinedYaml(`
comm_channels:
  LINE:
    type: MODBUSTCP
    hostname: 127.0.0.1
    port: ${proxy.port}
    devices:
      1: {model: "00", slave-id: 1, scan_frequency: ${SCAN_HZ}}
`),
  );
  const log = createLogger('CRITICAL');
  const runtime = buildRuntime(loadConfig({ file }).config, (name) => findModel(name, new Map()), log);
  await runtime.start();
  const server = await startModbusServer(
    { enabled: true, address: '127.0.0.1', port: 0, maxAgeMs: 100, virtualUnit: 250, write: true, allow: [] },
    runtime,
    log,
  );
  const clients = await Promise.all(Array.from({ length: 10 }, () => RawModbusClient.connect(server.port)));
  const slave = runtime.slaves[0]!;
  const scansIn = async (ms: number) => {
    const before = slave.stats.scans;
    await new Promise((resolve) => setTimeout(resolve, ms));
    return slave.stats.scans - before;
  };
  try {
    const quiet = await scansIn(WINDOW_MS);
    let running = true;
    let answered = 0;
    const load = clients.map(async (client, n) => {
      while (running) {
        await client.request(1, n % 2 === 0 ? pdu.read(1, 0, 4) : pdu.read(3, 1008, 4), 10_000);
        answered++;
      }
    });
    const loaded = await scansIn(WINDOW_MS);
    running = false;
    await Promise.all(load);
    t.diagnostic(`scans in ${WINDOW_MS} ms: ${quiet} quiet, ${loaded} with 10 clients; ${answered} client replies, ${server.stats.passthroughs} sent on to the board`);
    assert.ok(answered > 50, `the clients were served (${answered} replies)`);
    assert.ok(server.stats.passthroughs > 50, `their reads went to the board (${server.stats.passthroughs})`);
    assert.ok(loaded >= 0.9 * quiet, `scans: ${quiet} quiet, ${loaded} under load`);
  } finally {
    for (const client of clients) client.close();
    await server.stop();
    await runtime.stop();
    await proxy.stop();
    sim.close();
  }
});
