import { writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { apiGuards } from '../../src/api/access/guards.js';
import { createHttpServer } from '../../src/api/http/server.js';
import { loadHwDefinitionDir } from '../../src/boards/hwdef.js';
import type { BoardModel } from '../../src/boards/model.js';
import { findModel } from '../../src/boards/resolve.js';
import { confinedYaml } from './confined-config.js';
import { loadConfig } from '../../src/config/load.js';
import { createLogger } from '../../src/logging/log.js';
import { buildRuntime, type Runtime } from '../../src/runtime/runtime.js';
import type { SimulatedBoard } from '../../src/sim/simulated-board.js';
import { tempDir } from './temp-dir.js';

// The daemon built in-process from a config.yaml text and served on a free
// port, so tests speak real HTTP to it and can still reach into the runtime
// (simulated registers, registry) to check what a request did.

export interface TestDaemon {
  baseUrl: string;
  runtime: Runtime;
  /** Directory holding config.yaml and, unless the YAML names another, alias.yaml. */
  dir: string;
  /** The simulated board answering as `unit` on SIMULATOR bus `bus`. */
  board(bus: string, unit: number): SimulatedBoard;
  stop(): Promise<void>;
}

/**
 * A config.yaml with one SIMULATOR bus `SIM` whose inputs stay still, one
 * slave per entry: device name → model (slave ids 1, 2 … in order). Slaves
 * scan at 1 kHz, so a register set on a board shows within a quarter second
 * even in blocks read only every 250th scan.
 */
export function simulatorYaml(devices: Record<string, string>): string {
  const entries = Object.entries(devices)
    .map(([name, model], i) => `      ${name}:\n        model: '${model}'\n        slave-id: ${i + 1}\n        scan_frequency: 1000\n`)
    .join('');
  return `comm_channels:\n  SIM:\n    type: SIMULATOR\n    toggle_ms: 0\n    devices:\n${entries}`;
}

/** Start from `yaml`; pass the `dir` of an earlier daemon to restart on its files. */
export async function startDaemon(yaml: string, dir = tempDir('iogate-test-')): Promise<TestDaemon> {
  const file = join(dir, 'config.yaml');
  writeFileSync(file, confinedYaml(yaml));
  const { config } = loadConfig({ file });
  const log = createLogger('ERROR');
  // As the daemon does: hw-definition files (e.g. `<dir>/hw_definitions/*.yaml`) next to the built-in maps.
  const userModels = new Map<string, BoardModel>();
  for (const hwDir of config.hwDefinitionDirs) for (const [name, model] of loadHwDefinitionDir(hwDir).models) userModels.set(name, model);
  const runtime = buildRuntime(config, (name) => findModel(name, userModels), log);
  await runtime.start();
  const server: Server = createHttpServer({ registry: runtime.registry, feed: runtime.feed, version: 'test', ...apiGuards(config.apis) });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    runtime,
    dir,
    board(bus, unit) {
      const board = runtime.simulations.get(bus)?.boards.get(unit);
      if (!board) throw new Error(`no simulated board ${unit} on bus ${bus}`);
      return board;
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await runtime.stop();
    },
  };
}
