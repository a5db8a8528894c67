import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { freePort } from '../interop/free-port.js';
import { configFile } from '../helpers/http-call.js';
import { startSim, type SimProcess } from '../helpers/sim-process.js';
import { spawnDaemon, type SpawnedDaemon } from '../helpers/spawn-daemon.js';
import { tempDir } from '../helpers/temp-dir.js';
import { addPalette, installNodeRed, NODE_RED_MAIN } from './node-red-home.js';
import { eventually } from './rig.js';
import { endWithThisProcess } from '../helpers/orphan-guard.mjs';

// node-red-contrib-modbus (from npm, unmodified) in a real Node-RED as a
// master of iogate's Modbus TCP server (apis.modbus_server): its
// modbus-flex-getter reads holding registers and coils of unit 1, its
// modbus-flex-write writes coils, each fed by an `http in` node the test
// calls, as the nodes' own help describes (the query string is the request).
// Reads are compared with what the simulated board holds; writes are judged
// at the simulated board.
//
// 5.23.3 is the newest release whose dependencies all come from the npm
// registry (later ones fetch their Modbus library from another host).
// No node id may equal a property value of a config node (the client's name):
// Node-RED 4 would take it for a dependency of the config node on itself.
const MODBUS_PALETTE_VERSION = process.env.IOGATE_NODE_RED_MODBUS_VERSION ?? '5.23.3';
const UNIT = 1;
/** Register 0 of the Brain section holds the DI bits; register 1 the DO bits, which are also coils 0.. */
const DI_REGISTER = 0;
const DO_REGISTER = 1;

/** http in (GET /read, /write; the query is msg.payload) → flex-getter / flex-write → http response. */
function flow(modbusPort: number): unknown[] {
  const node = { z: 'tab', x: 100, y: 100 };
  return [
    { id: 'tab', type: 'tab', label: 'iogate modbus' },
    {
      id: 'client',
      type: 'modbus-client',
      name: 'iogate',
      clienttype: 'tcp',
      bufferCommands: true,
      stateLogEnabled: true,
      queueLogEnabled: false,
      failureLogEnabled: true,
      tcpHost: '127.0.0.1',
      tcpPort: String(modbusPort),
      tcpType: 'DEFAULT',
      serialPort: '/dev/null',
      serialType: 'RTU-BUFFERD',
      serialBaudrate: '9600',
      serialDatabits: '8',
      serialStopbits: '1',
      serialParity: 'none',
      serialConnectionDelay: '100',
      serialAsciiResponseStartDelimiter: '0x3A',
      unit_id: String(UNIT),
      commandDelay: '1',
      clientTimeout: '3000',
      reconnectOnTimeout: true,
      reconnectTimeout: '1000',
      parallelUnitIdsAllowed: true,
    },
    { ...node, id: 'read-in', type: 'http in', name: '', url: '/read', method: 'get', upload: false, swaggerDoc: '', wires: [['getter']] },
    {
      ...node,
      id: 'getter',
      type: 'modbus-flex-getter',
      name: 'getter',
      showStatusActivities: false,
      showErrors: true,
      logIOActivities: false,
      server: 'client',
      useIOFile: false,
      ioFile: '',
      useIOForPayload: false,
      emptyMsgOnFail: false,
      keepMsgProperties: true,
      wires: [['reply'], []],
    },
    { ...node, id: 'write-in', type: 'http in', name: '', url: '/write', method: 'get', upload: false, swaggerDoc: '', wires: [['writer']] },
    {
      ...node,
      id: 'writer',
      type: 'modbus-flex-write',
      name: 'writer',
      showStatusActivities: false,
      showErrors: true,
      server: 'client',
      emptyMsgOnFail: false,
      keepMsgProperties: true,
      wires: [['reply'], []],
    },
    { ...node, id: 'reply', type: 'http response', name: '', statusCode: '', headers: {}, wires: [] },
  ];
}

// Started at once, beside the simulator and the daemon; awaited in before() (handled here so a failure is not an unhandled rejection first).
const installing = installNodeRed();
installing.catch(() => undefined);

describe("node-red-contrib-modbus's flex-getter and flex-write against iogate's Modbus TCP server", () => {
  let sim: SimProcess;
  let daemon: SpawnedDaemon;
  let nodeRed: ChildProcess | undefined;
  let nodeRedUrl = '';
  let log = '';

  before(async () => {
    sim = await startSim(['--model', '00', '--slave-id', String(UNIT), '--tcp', '127.0.0.1:0', '--control', '127.0.0.1:0', '--toggle-ms', '0']);
    const { dir, file } = configFile(
      `comm_channels:
  PLC:
    type: MODBUSTCP
    hostname: 127.0.0.1
    port: ${sim.tcpPort}
    devices:
      ${UNIT}:
        model: '00'
        slave-id: ${UNIT}
        scan_frequency: 50
apis:
  modbus_server:
    enabled: true
    address: 127.0.0.1
    port: 0
`,
      'iogate-node-red-modbus-',
    );
    daemon = await spawnDaemon(['--config', file], { cwd: dir, tap: false });
    const modbusPort = Number(/Modbus TCP server listening on 127\.0\.0\.1:(\d+)/.exec(daemon.output())?.[1]);
    assert.ok(modbusPort > 0, daemon.output());

    await installing;
    const userDir = tempDir('iogate-node-red-modbus-');
    writeFileSync(join(userDir, 'package.json'), '{"name":"node-red-project","private":true}\n');
    await addPalette(userDir, 'node-red-contrib-modbus', MODBUS_PALETTE_VERSION);
    writeFileSync(join(userDir, 'flows.json'), '[]\n');
    const uiPort = await freePort();
    nodeRedUrl = `http://127.0.0.1:${uiPort}`;
    writeFileSync(
      join(userDir, 'settings.js'),
      `module.exports = { uiHost: '127.0.0.1', uiPort: ${uiPort}, flowFile: 'flows.json', credentialSecret: false,
  diagnostics: { enabled: false }, externalModules: { autoInstall: false, palette: { allowInstall: false } },
  logging: { console: { level: 'info', metrics: false, audit: false } } };\n`,
    );
    nodeRed = endWithThisProcess(spawn(process.execPath, [NODE_RED_MAIN, '--userDir', userDir, '--settings', join(userDir, 'settings.js')], { stdio: ['ignore', 'pipe', 'pipe'] }));
    nodeRed.stdout!.setEncoding('utf8').on('data', (chunk: string) => (log += chunk));
    nodeRed.stderr!.setEncoding('utf8').on('data', (chunk: string) => (log += chunk));
    await eventually(() => /Started flows/.test(log), `Node-RED starting\n${log}`, 60_000);

    // Deployed as the editor does: the admin API's POST /flows, a full deployment.
    const deployed = await fetch(`${nodeRedUrl}/flows`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'Node-RED-Deployment-Type': 'full', 'Node-RED-API-Version': 'v2' },
      body: JSON.stringify({ flows: flow(modbusPort) }),
      signal: AbortSignal.timeout(30_000),
    });
    assert.equal(deployed.status, 200, `${await deployed.text()}\n${log}`);
    await eventually(() => (log.match(/Started flows/g) ?? []).length >= 2, `Node-RED starting the deployed flow\n${log}`, 30_000);
  });

  after(async () => {
    if (nodeRed && nodeRed.exitCode === null) {
      nodeRed.kill('SIGTERM');
      await once(nodeRed, 'exit');
    }
    await daemon?.stop();
    await sim?.stop();
  });

  /** One request through the flow; undefined when the node answered nothing in time (its client still connecting). */
  async function call(path: string, query: Record<string, string | number>): Promise<any> {
    const url = `${nodeRedUrl}${path}?${new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)]))}`;
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(4000) });
      return response.ok ? await response.json() : undefined;
    } catch {
      return undefined;
    }
  }

  /** flex-getter's values for `fc` at `address`, `quantity` of them, retried until it answers. */
  async function read(fc: 1 | 3, address: number, quantity: number): Promise<number[]> {
    let values: unknown;
    await eventually(async () => Array.isArray((values = await call('/read', { fc, unitid: UNIT, address, quantity }))), `flex-getter FC${fc} ${address}+${quantity}\n${log}`, 20_000);
    return (values as Array<number | boolean>).slice(0, quantity).map(Number);
  }

  async function write(fc: 5 | 15, address: number, quantity: number, value: string): Promise<void> {
    await eventually(async () => (await call('/write', { fc, unitid: UNIT, address, quantity, value })) !== undefined, `flex-write FC${fc} ${address}=${value}\n${log}\n${daemon.output().slice(-3000)}`, 20_000);
  }

  const doBitsAtBoard = async (count: number) => {
    const [bits] = await sim.registers(UNIT, DO_REGISTER, 1);
    return Array.from({ length: count }, (_, i) => (bits! >> i) & 1);
  };

  test('Node-RED loaded the palette and the flow', async () => {
    assert.doesNotMatch(log, /Waiting for missing types/);
    const palette = (await (await fetch(`${nodeRedUrl}/nodes/node-red-contrib-modbus`, { headers: { Accept: 'application/json' } })).json()) as { version: string; nodes: Array<{ types: string[]; enabled: boolean; loaded: boolean }> };
    assert.equal(palette.version, MODBUS_PALETTE_VERSION);
    const loaded = palette.nodes.filter((set) => set.enabled && set.loaded !== false).flatMap((set) => set.types);
    assert.ok(loaded.length > 0, JSON.stringify(palette).slice(0, 2000));
    for (const type of ['modbus-client', 'modbus-flex-getter', 'modbus-flex-write']) assert.ok(loaded.includes(type), `${type} loaded: ${loaded}`);
  });

  test('flex-getter FC3 reads the holding registers the board holds', async () => {
    const inputs = 0b1010_0110;
    await sim.setRegisters(UNIT, DI_REGISTER, [inputs]);
    // A register iogate polls (from its cache once fresh) and one it does not (sent on to the board).
    await eventually(async () => (await read(3, DI_REGISTER, 2))[0] === inputs, `FC3 showing the inputs set at the board\n${log}`, 20_000);
    assert.deepEqual(await read(3, DI_REGISTER, 2), await sim.registers(UNIT, DI_REGISTER, 2));
    const config = 1000 + Math.floor(Math.random() * 9000);
    await sim.setRegisters(UNIT, 1010, [config]);
    const board = await sim.registers(UNIT, 1008, 4);
    assert.equal(board[2], config);
    await eventually(async () => JSON.stringify(await read(3, 1008, 4)) === JSON.stringify(board), `FC3 1008+4 matching the board ${board}\n${log}`, 20_000);
  });

  test('flex-write FC5 and FC15 switch the coils at the board, and flex-getter FC1 reads them back', async () => {
    await write(5, 2, 1, 'true');
    await eventually(async () => (await doBitsAtBoard(4))[2] === 1, `coil 2 on at the board\n${log}`);
    assert.deepEqual(await read(1, 0, 4), await doBitsAtBoard(4));
    await write(5, 2, 1, 'false');
    await eventually(async () => (await doBitsAtBoard(4))[2] === 0, `coil 2 off at the board\n${log}`);

    await write(15, 0, 4, '[true,false,true,true]');
    await eventually(async () => (await doBitsAtBoard(4)).join() === '1,0,1,1', `coils 0..3 = 1,0,1,1 at the board\n${log}`);
    assert.deepEqual(await read(1, 0, 4), [1, 0, 1, 1]);
    assert.deepEqual(await doBitsAtBoard(4), [1, 0, 1, 1]);
    // iogate saw the writes as its own outputs.
    const relay = (await (await fetch(`${daemon.baseUrl}/rest/do/1_03`)).json()) as { value: number };
    assert.equal(relay.value, 1);
  });
});
