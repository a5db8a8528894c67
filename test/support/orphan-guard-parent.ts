import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { endWithThisProcess } from '../helpers/orphan-guard.mjs';
import { startSim } from '../helpers/sim-process.js';
import { spawnDaemon } from '../helpers/spawn-daemon.js';

// A test process in miniature for test/unit/helpers/orphan-guard.test.ts: starts
// what test helpers start (a simulator; with `daemon` the built daemon too; with
// `tree` a shell with a child of its own, as nginx has its workers), prints the
// PIDs as JSON, then ends as argv[2] says: `wait` (until the test kills it, as
// node:test does at a file's deadline) or `throws` (an uncaught error, as a
// failing test file ends).

const how = process.argv[2];
const sim = await startSim(['--model', '01', '--slave-id', '1', '--tcp', '127.0.0.1:0']);
const pids = [sim.child.pid!];
if (process.argv.includes('daemon')) pids.push((await spawnDaemon([], { tap: false })).child.pid!);
if (process.argv.includes('tree')) {
  const shell = endWithThisProcess(spawn('sh', ['-c', 'sleep 600 & echo $!; wait'], { stdio: ['ignore', 'pipe', 'ignore'] }));
  const [line] = (await once(shell.stdout!, 'data')) as [Buffer];
  pids.push(shell.pid!, Number(String(line).trim()));
}
process.stdout.write(`${JSON.stringify(pids)}\n`);
if (how === 'throws') throw new Error('a failing test');
