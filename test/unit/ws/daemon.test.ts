import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import WebSocket from 'ws';
import { spawnDaemon } from '../../helpers/spawn-daemon.js';
import { connect } from '../../helpers/ws-client.js';

// The WebSocket as the built daemon serves it: on in the built-in
// configuration, off unless a config file enables it (as in EVOK).

function configFile(yaml: string): { dir: string; file: string } {
  const dir = mkdtempSync(join(tmpdir(), 'iogate-ws-'));
  const file = join(dir, 'config.yaml');
  writeFileSync(file, `alias_file: ${join(dir, 'alias.yaml')}\n${yaml}`);
  return { dir, file };
}

const TOGGLING = 'comm_channels:\n  SIM:\n    type: SIMULATOR\n    toggle_ms: 10\n    devices:\n      1:\n        model: "00"\n';

test('with websocket enabled, toggling simulated inputs are pushed to several clients', async () => {
  const { dir, file } = configFile(`apis:\n  websocket:\n    enabled: true\n${TOGGLING}`);
  const daemon = await spawnDaemon(['--config', file], { cwd: dir });
  const url = daemon.baseUrl.replace('http:', 'ws:') + '/ws';
  const clients = await Promise.all([connect(url), connect(url), connect(url)]);
  try {
    for (const client of clients) {
      const pushed = await client.nextMatching((message) => Array.isArray(message) && message.some((d) => d.dev === 'di'));
      assert.ok(pushed.length >= 1);
    }
  } finally {
    await Promise.all(clients.map((client) => client.close()));
    assert.equal(await daemon.stop(), 0);
  }
});

test('without websocket enabled there is no /ws', async () => {
  const { dir, file } = configFile(TOGGLING);
  const daemon = await spawnDaemon(['--config', file], { cwd: dir });
  try {
    const ws = new WebSocket(daemon.baseUrl.replace('http:', 'ws:') + '/ws');
    const [error] = await once(ws, 'error');
    assert.ok(error instanceof Error);
  } finally {
    await daemon.stop();
  }
});

test('the built-in configuration serves /ws', async () => {
  const daemon = await spawnDaemon([], { cwd: mkdtempSync(join(tmpdir(), 'iogate-ws-')) });
  try {
    const client = await connect(daemon.baseUrl.replace('http:', 'ws:') + '/ws');
    client.send({ cmd: 'full', dev: 'do', circuit: '1_01' });
    assert.equal((await client.reply()).dev, 'do');
    await client.close();
  } finally {
    await daemon.stop();
  }
});
