import assert from 'node:assert/strict';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import { brain00 } from '../../../src/boards/builtin/neuron.js';
import { Simulation } from '../../../src/sim/simulation.js';
import { modbusTcpServer } from '../../../src/sim/tcp-server.js';
import { BRAIN_DO, OutputTimeline } from '../../helpers/output-timeline.js';
import { spawnDaemon } from '../../helpers/spawn-daemon.js';
import { tempDir } from '../../helpers/temp-dir.js';

// A request is authorized when its head comes. Its body may follow much
// later (a slow client may take the whole request timeout), and a reload may
// have revoked the token meanwhile: the write used to be carried out anyway.
// It is authorized again once the body is in, against the tokens then in
// force, on every door that takes a body (REST, bulk, JSON-RPC). The output
// is judged at the simulated board, which the daemon reaches over Modbus TCP.

const ADMIN = 'admin-token-00000001';
const WRITERS = { rest: 'writer-rest-00000001', bulk: 'writer-bulk-00000001', rpc: 'writer-rpc-000000001' } as const;
type Door = keyof typeof WRITERS;

const REQUESTS: Record<Door, { path: string; type: string; body: string }> = {
  rest: { path: '/rest/do/1_01', type: 'application/x-www-form-urlencoded', body: 'value=1' },
  bulk: { path: '/bulk', type: 'application/json', body: JSON.stringify({ individual_assignments: [{ device_type: 'do', device_circuit: '1_01', assigned_values: { value: 1 } }] }) },
  rpc: { path: '/rpc', type: 'application/json', body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'do_set', params: { circuit: '1_01', value: 1 } }) },
};

function configText(port: number, writers: Door[]): string {
  return `alias_file: alias.yaml
apis:
  auth:
    tokens:
      - {name: admin, token: ${ADMIN}, scope: admin}
${writers.map((door) => `      - {name: ${door}, token: ${WRITERS[door]}, scope: write}`).join('\n')}
comm_channels:
  GW:
    type: MODBUSTCP
    hostname: 127.0.0.1
    port: ${port}
    timeout: 200
    devices:
      1:
        model: "00"
`;
}

/** Reads from the socket until `pattern` matches what came so far. */
function readUntil(socket: Socket, pattern: RegExp, limitMs = 10_000): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => done(new Error(`no ${pattern} within ${limitMs} ms; got ${JSON.stringify(text)}`)), limitMs);
    const onData = (chunk: Buffer) => {
      text += chunk.toString('latin1');
      if (pattern.test(text)) done();
    };
    const done = (error?: Error) => {
      clearTimeout(timer);
      socket.off('data', onData);
      if (error) reject(error);
      else resolve(text);
    };
    socket.on('data', onData);
  });
}

test('a write whose token is revoked by a reload between its head and its body is refused (401) on REST, bulk and RPC; nothing switches', async (t) => {
  const simulation = new Simulation([{ unit: 1, model: brain00 }], 0);
  const modbus = modbusTcpServer(simulation.boards);
  modbus.listen(0, '127.0.0.1');
  await once(modbus, 'listening');
  const modbusPort = (modbus.address() as AddressInfo).port;
  const timeline = new OutputTimeline(simulation.boards.get(1)!, [BRAIN_DO(1)]);
  const dir = tempDir('iogate-revoked-');
  const file = join(dir, 'config.yaml');
  let writers: Door[] = ['rest', 'bulk', 'rpc'];
  writeFileSync(file, configText(modbusPort, writers));
  const daemon = await spawnDaemon(['--config', file], { cwd: dir, tap: false });
  const { hostname, port } = new URL(daemon.baseUrl);
  try {
    for (const door of ['rest', 'bulk', 'rpc'] as const) {
      await t.test(door, async () => {
        const { path, type, body } = REQUESTS[door];
        const socket = connect(Number(port), hostname);
        await once(socket, 'connect');
        try {
          // The head, authorized at once (the server says so with 100 Continue); the body is held back.
          socket.write(
            `POST ${path} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nAuthorization: Bearer ${WRITERS[door]}\r\nContent-Type: ${type}\r\n` +
              `Content-Length: ${Buffer.byteLength(body)}\r\nExpect: 100-continue\r\n\r\n`,
          );
          await readUntil(socket, /^HTTP\/1\.1 100 Continue\r\n\r\n/);

          writers = writers.filter((other) => other !== door);
          writeFileSync(file, configText(modbusPort, writers));
          const reload = await fetch(`${daemon.baseUrl}/config/reload`, { method: 'POST', headers: { Authorization: `Bearer ${ADMIN}` } });
          assert.equal(reload.status, 200, await reload.text());

          socket.write(body);
          const reply = await readUntil(socket, /\r\n\r\n[\s\S]*\}/);
          const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(reply)?.[1]);
          assert.equal(status, 401, reply);
          assert.match(reply, /"success":\s*false/);
          assert.equal(timeline.isOn('do/1_01'), false, 'the output did not switch');
          assert.equal(timeline.samples.some(({ on }) => on[0]), false, 'not even for a moment');
        } finally {
          socket.destroy();
        }
      });
    }
  } finally {
    timeline.stop();
    await daemon.stop();
    modbus.close();
  }
});
