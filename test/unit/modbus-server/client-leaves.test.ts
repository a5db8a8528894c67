import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startModbusServer, type ModbusServer } from '../../../src/api/modbus-server/server.js';
import { createLogger } from '../../../src/logging/log.js';
import { serveRequest } from '../../../src/modbus/slave.js';
import type { Runtime } from '../../../src/runtime/runtime.js';
import type { SimulatedBoard } from '../../../src/sim/simulated-board.js';
import { until } from '../../helpers/in-process.js';
import { startRuntimeBehindProxy, type ProxiedRuntime } from '../../helpers/proxied-runtime.js';
import { RawModbusClient, pdu } from '../../helpers/raw-modbus-client.js';

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
let proxied: ProxiedRuntime;
let runtime: Runtime;
let server: ModbusServer;

before(async () => {
  proxied = await startRuntimeBehindProxy('{model: "00", slave-id: 1, scan_enabled: false}', 'iogate-mbs-leaves-', ['timeout: 2000']);
  ({ board, runtime } = proxied);
  server = await startModbusServer({ enabled: true, address: '127.0.0.1', port: 0, maxAgeMs: 0, virtualUnit: 250, write: true, allow: [] }, runtime, log);
  // max_age_ms 0: every read goes to the board. Only the clients' reads are held up: what the daemon asked at start-up has been answered.
  await until(() => runtime.slaves[0]!.bus.queuedPolls === 0, 'start-up reads to end');
  proxied.proxy.delayMs.set(1, LINE_MS);
});

after(async () => {
  await server?.stop();
  await proxied?.stop();
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
