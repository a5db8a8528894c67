import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { demoStateDir, loadConfig } from '../../../src/config/load.js';

// Without a configuration file (`npm start` in a checkout) the demo's state
// goes neither into the current folder nor into /var/lib.

test('the demo keeps its state under $XDG_STATE_HOME, else in the OS temp dir', () => {
  assert.equal(demoStateDir({ XDG_STATE_HOME: '/home/me/.local/state' }), '/home/me/.local/state/iogate');
  const fallback = demoStateDir({});
  assert.ok(fallback.startsWith(join(tmpdir(), 'iogate-demo-state-')), fallback);
  // A relative XDG_STATE_HOME is invalid by the spec and ignored.
  assert.equal(demoStateDir({ XDG_STATE_HOME: 'state' }), fallback);
});

test('the built-in configuration uses it, not the current folder', () => {
  const { config } = loadConfig({});
  assert.equal(config.stateDir, demoStateDir());
  assert.ok(!config.stateDir.startsWith(process.cwd()), config.stateDir);
  assert.ok(!config.stateDir.startsWith('/var/lib'), config.stateDir);
});
