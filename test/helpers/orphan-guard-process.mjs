// The guard that test/helpers/orphan-guard.mjs starts, one per test or bench
// process: it reads `+<pid>` and `-<pid>` lines on its stdin, the children that
// process started and those that ended. Its stdin is a pipe whose other end only
// that process holds, so it reads end-of-file when that process ends, however
// it ends: a normal exit, an uncaught error, SIGTERM, or a SIGKILL it never saw
// (node:test's deadline, a runner stopped by CI). Then the guard kills what is
// still running, children of those children included, and exits.

import { readFileSync, readdirSync } from 'node:fs';

// Its life is the pipe's: a Ctrl-C or CI's timeout signals the whole process
// group, and the guard must still be there to reap once its parent is gone.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => {});

/** pid → its start time (clock ticks after boot), so a pid the kernel gave to another process since is left alone. */
const watched = new Map();

/** Field 22 of /proc/<pid>/stat (the start time) and field 4 (the parent), or undefined once it is gone; not on Linux: unknown. */
function stat(pid) {
  let text;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name (field 2) is in parentheses and may hold spaces; the fields after it are plain.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { state: fields[0], ppid: Number(fields[1]), start: fields[19] };
}

const onLinux = process.platform === 'linux';

/** The processes whose parent is one of `roots`, and theirs, found while the roots still run (once killed, theirs go to init). */
function descendants(roots) {
  if (!onLinux) return [];
  const children = new Map();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const info = stat(name);
    if (info === undefined) continue;
    const list = children.get(info.ppid) ?? [];
    list.push(Number(name));
    children.set(info.ppid, list);
  }
  const found = [];
  const queue = [...roots];
  while (queue.length > 0) {
    for (const child of children.get(queue.shift()) ?? []) {
      found.push(child);
      queue.push(child);
    }
  }
  return found;
}

function reap() {
  const alive = [...watched].filter(([pid, start]) => !onLinux || stat(pid)?.start === start).map(([pid]) => pid);
  for (const pid of [...alive, ...descendants(alive)]) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  process.exit(0);
}

let pending = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  pending += chunk;
  const lines = pending.split('\n');
  pending = lines.pop();
  for (const line of lines) {
    const pid = Number(line.slice(1));
    if (!(pid > 0)) continue;
    if (line[0] === '+') {
      const info = onLinux ? stat(pid) : { start: undefined };
      if (info !== undefined) watched.set(pid, info.start);
    } else watched.delete(pid);
  }
});
process.stdin.on('end', reap);
process.stdin.on('error', reap);
