import { readFileSync } from 'node:fs';

// What processes cost, read from /proc (Linux): resident memory (VmRSS and
// RssAnon, the part that is the process's own) and CPU time, summed over a
// set of PIDs. CPU is given as a share of one core over a window.

const TICKS_PER_S = 100;

export interface MemorySample {
  rssMb: number;
  rssAnonMb: number;
}

function statusKb(pid: number, key: string): number {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text);
  return match ? Number(match[1]) : 0;
}

/** Mean resident memory per process, MB. */
export function memoryPerProcess(pids: readonly number[]): MemorySample {
  let rss = 0;
  let anon = 0;
  for (const pid of pids) {
    rss += statusKb(pid, 'VmRSS');
    anon += statusKb(pid, 'RssAnon');
  }
  return { rssMb: rss / 1024 / pids.length, rssAnonMb: anon / 1024 / pids.length };
}

/** User + system CPU seconds of each process so far. */
export function cpuSeconds(pids: readonly number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    // Fields after the command name (which may hold spaces), from its closing parenthesis: utime is the 12th, stime the 13th.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    ticks += Number(fields[11]) + Number(fields[12]);
  }
  return ticks / TICKS_PER_S;
}

/** A running CPU measurement: `percentPerProcess()` is the mean share of one core since it began. */
export function cpuWindow(pids: readonly number[]): { percentPerProcess(): number } {
  const start = cpuSeconds(pids);
  const startAt = Date.now();
  return {
    percentPerProcess() {
      const seconds = (Date.now() - startAt) / 1000;
      return ((cpuSeconds(pids) - start) / seconds / pids.length) * 100;
    },
  };
}
