import assert from 'node:assert/strict';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { EXIT_SOFTWARE } from '../../../src/lifecycle/exit-codes.js';
import { spawnDaemon } from '../../helpers/spawn-daemon.js';

// The policy for an exception nothing caught (a bug, never a client's doing):
// the daemon logs it with its stack and exits with EX_SOFTWARE (70), which
// the unit restarts, without a start limit that would leave it failed. The
// failure is planted from outside the daemon: a module preloaded with
// node's --import throws (or rejects) on SIGUSR2, once the daemon listens.

const PLANT = `process.on('SIGUSR2', () => {
  if (process.env.PLANTED === 'rejection') void Promise.reject(new Error('planted rejection'));
  else throw new Error('planted exception');
});`;
const PRELOAD = ['--import', `data:text/javascript,${encodeURIComponent(PLANT)}`];

for (const [kind, what] of [
  ['exception', 'uncaught exception'],
  ['rejection', 'unhandled promise rejection'],
] as const) {
  test(`an ${what} is logged with its stack and ends the process with ${EXIT_SOFTWARE}`, async () => {
    process.env['PLANTED'] = kind;
    const daemon = await spawnDaemon([], { nodeOptions: PRELOAD });
    delete process.env['PLANTED'];
    const exited = once(daemon.child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
    daemon.child.kill('SIGUSR2');
    const [code] = await exited;
    assert.equal(code, EXIT_SOFTWARE, daemon.output());
    assert.match(daemon.output(), new RegExp(`CRITICAL ${what}: Error: planted ${kind}\\n\\s+at `));
    assert.match(daemon.output(), /CRITICAL iogate exits with status 70 \(internal error\) to be restarted/);
  });
}

test('the unit restarts on that status and has no start limit that would leave it failed', () => {
  const unit = readFileSync(new URL('../../../deploy/iogate.service', import.meta.url), 'utf8');
  assert.match(unit, /^Restart=on-failure$/m);
  const prevented = /^RestartPreventExitStatus=(.*)$/m.exec(unit)?.[1]?.split(/\s+/) ?? [];
  assert.ok(!prevented.includes(String(EXIT_SOFTWARE)), `${EXIT_SOFTWARE} must be restarted`);
  assert.match(unit, /^StartLimitIntervalSec=0$/m);
  assert.ok(Number(/^RestartSec=(\d+)$/m.exec(unit)?.[1]) >= 1, 'restarts are spaced out');
});
