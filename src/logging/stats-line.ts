import type { Runtime } from '../runtime/runtime.js';

// Counters for benchmarks and field diagnosis, written as one JSON line to
// stderr every period when IOGATE_STATS_MS is set. A line rather than an HTTP
// route: it adds no API surface, needs no access control, and costs nothing
// when the variable is unset. Counters are cumulative; a reader takes the
// difference of two lines and divides by the difference of their `atMs`.

export interface StatsSnapshot {
  /** performance.now() of the snapshot, so rates do not depend on when the line was read. */
  atMs: number;
  plannedPollRate: number;
  /** Reads and writes served by simulated boards (SIMULATOR buses only). */
  simReads: number;
  simWrites: number;
  busRequests: number;
  busTimeouts: number;
  scans: number;
  failedScans: number;
  /** Scan slots skipped because the previous scan was still running or the process stalled. */
  overruns: number;
}

export function statsSnapshot(runtime: Runtime): StatsSnapshot {
  const snapshot: StatsSnapshot = {
    atMs: Math.round(performance.now() * 1000) / 1000,
    plannedPollRate: runtime.plannedPollRate,
    simReads: 0,
    simWrites: 0,
    busRequests: 0,
    busTimeouts: 0,
    scans: 0,
    failedScans: 0,
    overruns: 0,
  };
  for (const simulation of runtime.simulations.values()) {
    for (const board of simulation.boards.values()) {
      snapshot.simReads += board.reads;
      snapshot.simWrites += board.writes;
    }
  }
  for (const bus of runtime.buses) {
    const stats = bus.stats();
    snapshot.busRequests += stats.requests;
    snapshot.busTimeouts += stats.timeouts;
  }
  for (const slave of runtime.slaves) {
    snapshot.scans += slave.stats.scans;
    snapshot.failedScans += slave.stats.failedScans;
    snapshot.overruns += slave.stats.overruns;
  }
  return snapshot;
}

/** Starts the periodic line; returns a stop function. */
export function startStatsLine(runtime: Runtime, periodMs: number, write: (line: string) => void): () => void {
  const timer = setInterval(() => write(`stats ${JSON.stringify(statsSnapshot(runtime))}\n`), periodMs);
  // Diagnostics never keep the process alive on their own.
  timer.unref();
  return () => clearInterval(timer);
}
