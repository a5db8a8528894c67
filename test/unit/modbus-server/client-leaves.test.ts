import assert from 'node:assert/strict';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { startModbusServer, type ModbusServer } from '../../../src/api/modbus-server/server.js';
import { brain00 } from '../../../src/boards/builtin/neuron.js';
import { findModel } from '../../../src/boards/resolve.js';
import { loadConfig } from '../../../src/config/load.js';
import { createLogger } from '../../../src/logging/log.js';
import { serveRequest } from '../../../src/modbus/slave.js';
import { buildRuntime, type Runtime } from '../../../src/runtime/runtime.js';
import { SimulatedBoard } from '../../../src/sim/simulated-board.js';
import { modbusTcpServer } from '../../../src/sim/tcp-server.js';
import { confinedYaml } from '../../helpers/confined-config.js';
import { FaultyProxy } from '../../helpers/faulty-proxy.js';
import { until } from '../../helpers/in-process.js';
import { RawModbusClient, pdu } from '../../helpers/raw-modbus-client.js';
import { tempDir } from '../../helpers/temp-dir.js';

// Clients that leave while their request is on the line or waits for it.
// Each request is answered on its own connection with its own transaction id
// (every client here numbers its requests from 1, so a reply sent to the
// wrong connection would be taken for that connection's own), a request
// whose client has gone is not sent to the board, and the server's turn on
// the bus passes on, so those still connected are served. The board answers
// LINE_MS late (a proxy holds its replies), so there is time to leave.

const LINE_MS = 300;
const log = createLogger('CRITICAL');

let board: SimulatedBoard;
let sim: ReturnType<typeof modbusTcpServer>;
let proxy: FaultyProxy;
let runtime: Runtime;
let server: ModbusServer;

before(async () => {
  board = new SimulatedBoard(brain00);
  sim = modbusTcpServer(new Map([[1, board]])).listen(0, '127.0.0.1');
  await once(sim, 'listening');
  proxy = await FaultyProxy.start({ host: '127.0.0.1', port: (sim.address() as AddressInfo).port });
  const file = join(tempDir('iogate-mbs-leaves-'), 'config.yaml');
  writeFileSync(
    file,
    confinedYaml(`
comm_channels:
  LINE:
    type: MODBUSTCP
    hostname: 127.0.0.1
    port: ${proxy.port}
    timeout: 2000
    devices:
      1: {model: "00", slave-id: 1, scan_enabled: false}
`),
  );
  runtime = buildRuntime(loadConfig({ file }).config, (name) => findModel(name, new Map()), log);
  await runtime.start();
  server = await startModbusServer({ enabled: true, address: '127.0.0.1', port: 0, maxAgeMs: 0, virtualUnit: 250, write: true, allow: [] }, runtime, log);
  // max_age_ms 0: every read goes to the board. Only the clients' reads are held up: what the daemon asked at start-up has been answered.
  await until(() => runtime.slaves[0]!.bus.queuedPolls === 0, 'start-up reads to end');
  proxy.delayMs.set(1, LINE_MS);
});

after(async () => {
  await server?.stop();
  await runtime?.stop();
  await proxy?.stop();
  sim?.close();
});

test('a client that leaves mid-request gets nothing, the one waiting behind a gone client is not sent, and the next client gets its own answer', async () => {
  board.set('holding', 1010, 4321);
  const asked = board.requests;
  const passthroughs = server.stats.passthroughs;

  // A's read goes on the line; C's waits for the server's turn on the bus, then B's.
  const a = await RawModbusClient.connect(server.port);
  const aReply = a.request(1, pdu.read(3, 0, 2)).catch((error: Error) => error);
  await until(() => board.requests === asked + 1, "A's read at the board");
  const c = await RawModbusClient.connect(server.port);
  const cReply = c.request(1, pdu.read(3, 2, 1)).catch((error: Error) => error);
  await until(() => server.stats.passthroughs === passthroughs + 2, "C's read waiting for the bus");
  const b = await RawModbusClient.connect(server.port);
  const bRequest = pdu.read(3, 1008, 4);
  const bReply = b.request(1, bRequest, 5_000);
  await until(() => server.stats.passthroughs === passthroughs + 3, "B's read waiting for the bus");

  // A leaves while its read is on the line, C while its own waits.
  a.close();
  c.close();
  assert.ok((await aReply) instanceof Error);
  assert.ok((await cReply) instanceof Error);

  // B, whose transaction id is A's and C's too, gets the answer to its own read.
  const bAnswer = await bReply;
  assert.equal(board.requests, asked + 2, "A's read and B's went to the board; C's, whose client had gone, did not");
  assert.deepEqual(bAnswer, serveRequest(board, bRequest));

  // The turn on the bus was handed on each time: the next request is served as well.
  const again = pdu.read(3, 1010, 1);
  assert.deepEqual(await b.request(1, again, 5_000), serveRequest(board, again));
  b.close();
});
