import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { brain00 } from '../../src/boards/builtin/neuron.js';
import { findModel } from '../../src/boards/resolve.js';
import { loadConfig } from '../../src/config/load.js';
import { createLogger } from '../../src/logging/log.js';
import { buildRuntime, type Runtime } from '../../src/runtime/runtime.js';
import { SimulatedBoard } from '../../src/sim/simulated-board.js';
import { modbusTcpServer } from '../../src/sim/tcp-server.js';
import { confinedYaml } from './confined-config.js';
import { FaultyProxy } from './faulty-proxy.js';
import { tempDir } from './temp-dir.js';

// A Brain board simulated in this process (unit 1), served over Modbus TCP
// behind a FaultyProxy (so a test can make the line slow), and a runtime whose
// bus LINE reaches it through the proxy. The whole set shares one event loop,
// as the daemon's parts do, so a test can count turns and rates in-process.

export interface ProxiedRuntime {
  board: SimulatedBoard;
  proxy: FaultyProxy;
  runtime: Runtime;
  stop(): Promise<void>;
}

/** `device`: unit 1's line in `devices:` (e.g. `{model: "00", slave-id: 1, scan_enabled: false}`); `busLines`: more settings of the bus. */
export async function startRuntimeBehindProxy(device: string, dirPrefix: string, busLines: string[] = []): Promise<ProxiedRuntime> {
  const board = new SimulatedBoard(brain00);
  const sim = modbusTcpServer(new Map([[1, board]])).listen(0, '127.0.0.1');
  await once(sim, 'listening');
  const proxy = await FaultyProxy.start({ host: '127.0.0.1', port: (sim.address() as AddressInfo).port });
  const file = join(tempDir(dirPrefix), 'config.yaml');
  writeFileSync(
    file,
    confinedYaml(
      ['comm_channels:', '  LINE:', '    type: MODBUSTCP', '    hostname: 127.0.0.1', `    port: ${proxy.port}`, ...busLines.map((line) => `    ${line}`), '    devices:', `      1: ${device}`, ''].join('\n'),
    ),
  );
  const runtime = buildRuntime(loadConfig({ file }).config, (name) => findModel(name, new Map()), createLogger('CRITICAL'));
  await runtime.start();
  return {
    board,
    proxy,
    runtime,
    async stop() {
      await runtime.stop();
      await proxy.stop();
      sim.close();
    },
  };
}
