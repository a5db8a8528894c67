import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

// Every process a test helper or a bench starts (the daemon, the simulator,
// brokers, ptys, proxies) ends with the process that started it, however that
// one ends. A normal exit or an uncaught error runs 'exit' hooks, which kill
// them at once. SIGTERM without a handler and SIGKILL (node:test's deadline
// for a test file, a runner stopped by CI) run nothing, and the children
// would live on as orphans holding ports and CPU: for those a small guard
// process (orphan-guard-process.mjs) holds the read end of a pipe only this
// process writes to, sees it close when this process is gone, and kills them.

const GUARD = fileURLToPath(new URL('./orphan-guard-process.mjs', import.meta.url));

const running = new Set();
let guard;

function startGuard() {
  const env = { ...process.env };
  // Plain node: the guard is plain JavaScript and should start fast, without a loader this process may have.
  delete env.NODE_OPTIONS;
  const started = spawn(process.execPath, [GUARD], { stdio: ['pipe', 'ignore', 'inherit'], env });
  // Neither the guard nor its pipe keeps this process alive.
  started.unref();
  started.stdin.unref?.();
  // A guard that died (it never should) must not crash the test with EPIPE: its children fall back to the exit hook.
  started.stdin.on('error', () => {});
  process.on('exit', () => {
    // SIGKILL: a daemon stopped by SIGTERM would save its state into a temp directory being removed.
    for (const child of running) child.kill('SIGKILL');
  });
  return started;
}

/** Ties `child` to this process: it is killed when this process ends, however it ends. Returns `child`. */
export function endWithThisProcess(child) {
  if (child.pid === undefined) return child; // spawn failed; its 'error' event says why
  guard ??= startGuard();
  running.add(child);
  guard.stdin.write(`+${child.pid}\n`);
  child.once('exit', () => {
    running.delete(child);
    if (guard.stdin.writable) guard.stdin.write(`-${child.pid}\n`);
  });
  return child;
}
