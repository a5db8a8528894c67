import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { freePort } from '../interop/free-port.js';
import { installNodeRed, NODE_RED_MAIN } from './node-red-home.js';
import { clientsMissing, eventually, NODE_RED_NODES, startRig, type Rig } from './rig.js';
import { tempDir } from '../helpers/temp-dir.js';
import { endWithThisProcess } from '../helpers/orphan-guard.mjs';

// Unipi's Node-RED nodes (node-red-contrib-unipi-evok, unmodified) in a real
// Node-RED, connected to iogate through nginx with deploy/nginx-iogate.conf.
// The flow sends no `filter`: it relies on the unfiltered pushes, which
// reached Node-RED as Buffers (binary frames) and matched nothing.
// Node-RED comes from the npm registry (./node-red-home.ts).

const run = promisify(execFile);

/**
 * The flow: `websocket in` → `unipi-input-v3` (di 1.01, property value) →
 * `unipi-output-v3` (set do 1.02) → `websocket out`, so output 1_02 follows
 * input 1_01. Debug nodes log the client's connection and every input event.
 */
function flow(wsUrl: string): unknown[] {
  return [
    { id: 'tab', type: 'tab', label: 'iogate' },
    { id: 'evok', type: 'websocket-client', path: wsUrl, tls: '', wholemsg: 'false', hb: '0', subprotocol: '' },
    { id: 'in', type: 'websocket in', z: 'tab', name: '', server: '', client: 'evok', x: 100, y: 100, wires: [['di']] },
    {
      id: 'di',
      type: 'unipi-input-v3',
      z: 'tab',
      name: 'DI 1.01',
      alias: '',
      devices: 'di',
      circuits: '1.01',
      property: 'value',
      seedev: '0',
      seecirc: '0',
      seeorig: '0',
      x: 300,
      y: 100,
      wires: [['do', 'seen']],
    },
    {
      id: 'do',
      type: 'unipi-output-v3',
      z: 'tab',
      name: 'DO 1.02',
      cmd: 'set',
      alias: '',
      devices: 'do',
      circuits: '1.02',
      enableFil: '0',
      x: 500,
      y: 100,
      wires: [['out']],
    },
    { id: 'out', type: 'websocket out', z: 'tab', name: '', server: '', client: 'evok', x: 700, y: 100, wires: [] },
    { id: 'seen', type: 'debug', z: 'tab', name: 'di-event', active: true, tosidebar: false, console: true, tostatus: false, complete: 'payload', targetType: 'msg', x: 500, y: 200, wires: [] },
    { id: 'status', type: 'status', z: 'tab', name: '', scope: ['in'], x: 100, y: 300, wires: [['link-state']] },
    { id: 'link-state', type: 'debug', z: 'tab', name: 'ws-status', active: true, tosidebar: false, console: true, tostatus: false, complete: 'status', targetType: 'msg', x: 300, y: 300, wires: [] },
  ];
}

const skip = clientsMissing();

describe("Unipi's Node-RED nodes through nginx with deploy/nginx-iogate.conf", { skip }, () => {
  let rig: Rig;
  let nodeRed: ChildProcess | undefined;
  let log = '';

  before(async () => {
    await installNodeRed();
    rig = await startRig('iogate');
    const userDir = tempDir('iogate-node-red-');
    writeFileSync(join(userDir, 'package.json'), '{"name":"node-red-project","private":true}\n');
    // As a user installs them: from the folder, copied in (not linked).
    await run('npm', ['install', '--no-audit', '--no-fund', '--install-links', NODE_RED_NODES], { cwd: userDir, timeout: 300_000 });
    const wsUrl = `ws://127.0.0.1:${rig.nginx.port}/ws`;
    writeFileSync(join(userDir, 'flows.json'), JSON.stringify(flow(wsUrl), null, 2));
    writeFileSync(
      join(userDir, 'settings.js'),
      `module.exports = { uiHost: '127.0.0.1', uiPort: ${await freePort()}, flowFile: 'flows.json', credentialSecret: false,
  diagnostics: { enabled: false }, externalModules: { autoInstall: false, palette: { allowInstall: false } },
  logging: { console: { level: 'info', metrics: false, audit: false } } };\n`,
    );
    nodeRed = endWithThisProcess(spawn(process.execPath, [NODE_RED_MAIN, '--userDir', userDir, '--settings', join(userDir, 'settings.js')], {
      stdio: ['ignore', 'pipe', 'pipe'],
    }));
    nodeRed.stdout!.setEncoding('utf8').on('data', (chunk: string) => (log += chunk));
    nodeRed.stderr!.setEncoding('utf8').on('data', (chunk: string) => (log += chunk));
    await eventually(() => /Started flows/.test(log), `Node-RED starting its flows\n${log}`, 60_000);
    await eventually(() => /\[debug:ws-status\][\s\S]*connected/.test(log), `the websocket-client connecting through nginx\n${log}`, 15_000);
  });

  after(async () => {
    if (nodeRed && nodeRed.exitCode === null) {
      nodeRed.kill('SIGTERM');
      await once(nodeRed, 'exit');
    }
    await rig?.stop();
  });

  test('the flow loaded both Unipi nodes', () => {
    assert.doesNotMatch(log, /Waiting for missing types/);
    assert.doesNotMatch(log, /unipi-(input|output)-v3.*(error|Error)/);
  });

  test('an input change reaches unipi-input-v3 without a filter, and unipi-output-v3 sets the output in iogate', async () => {
    assert.equal((await rig.device('do', '1_02')).value, 0);
    for (const on of [true, false, true]) {
      const seen = (log.match(/\[debug:di-event\]/g) ?? []).length;
      await rig.setInput(0, on);
      await eventually(async () => (await rig.device('do', '1_02')).value === (on ? 1 : 0), `DO 1_02 following DI 1_01 (${on ? 'on' : 'off'})\n${log}`);
      assert.ok((log.match(/\[debug:di-event\]/g) ?? []).length > seen, 'unipi-input-v3 passed the event on');
    }
    assert.doesNotMatch(log, /Message was not properly evaulated|SyntaxError|Unexpected token/);
  });
});
