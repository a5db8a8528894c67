import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runDaemonToExit, spawnDaemon } from '../../helpers/spawn-daemon.js';
import { SIMULATED_BUS, bearer, configFile, httpCall } from '../../helpers/http-call.js';

// The listen address policy: loopback by default, the network only with
// tokens or an explicit opt-in to anonymous access.

function runUntilExit(args: string[], cwd: string) {
  return runDaemonToExit(['--port', '0', ...args], { cwd });
}

test('the default listen address is loopback', async () => {
  const { dir, file } = configFile(SIMULATED_BUS);
  const daemon = await spawnDaemon(['--config', file], { cwd: dir });
  try {
    assert.match(daemon.baseUrl, /^http:\/\/127\.0\.0\.1:/);
  } finally {
    assert.equal(await daemon.stop(), 0);
  }
});

test('all interfaces without tokens: refuses to start and says how to fix it', async () => {
  const { dir, file } = configFile(SIMULATED_BUS);
  for (const address of ['0.0.0.0', '::']) {
    const { code, stderr } = await runUntilExit(['--config', file, '--address', address], dir);
    assert.equal(code, 78, stderr);
    assert.match(stderr, new RegExp(`refusing to listen on ${address.replace(/\./g, '\\.')} without access control`));
    assert.match(stderr, /apis\.auth\.tokens/);
    assert.match(stderr, /allow_anonymous: true/);
  }
});

test('all interfaces with allow_anonymous: true starts, open as EVOK', async () => {
  const { dir, file } = configFile(`apis:\n  address: 0.0.0.0\n  auth:\n    allow_anonymous: true\n${SIMULATED_BUS}`);
  const daemon = await spawnDaemon(['--config', file], { cwd: dir });
  try {
    const port = new URL(daemon.baseUrl).port;
    assert.equal((await httpCall(`http://127.0.0.1:${port}`, '/rest/di/1_01')).status, 200);
  } finally {
    assert.equal(await daemon.stop(), 0);
  }
});

test('all interfaces with tokens starts and demands them from non-exempt clients', async () => {
  const { dir, file } = configFile(
    `apis:\n  auth:\n    loopback_anonymous: false\n    tokens: [{name: a, token: bind-test-token, scope: read}]\n${SIMULATED_BUS}`,
  );
  const daemon = await spawnDaemon(['--config', file, '--address', '0.0.0.0'], { cwd: dir });
  try {
    const local = `http://127.0.0.1:${new URL(daemon.baseUrl).port}`;
    assert.equal((await httpCall(local, '/rest/di/1_01')).status, 401);
    assert.equal((await httpCall(local, '/rest/di/1_01', { headers: bearer('bind-test-token') })).status, 200);
  } finally {
    assert.equal(await daemon.stop(), 0);
  }
});
