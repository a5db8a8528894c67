import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { createHttpServer } from '../../src/api/http/server.js';
import { startWebhook, type Webhook, type WebhookOptions } from '../../src/api/webhook.js';
import { apiGuards } from '../../src/api/access/guards.js';
import { attachWebSocket, type WebSocketEndpoint, type WebSocketOptions } from '../../src/api/ws/server.js';
import { findModel } from '../../src/boards/resolve.js';
import { confinedYaml } from './confined-config.js';
import { loadConfig } from '../../src/config/load.js';
import type { Config } from '../../src/config/types.js';
import { createLogger, type Logger } from '../../src/logging/log.js';
import { buildRuntime, type Runtime } from '../../src/runtime/runtime.js';
import type { FirmwareOffload } from '../../src/automations/offload.js';
import type { SimulatedBoard } from '../../src/sim/simulated-board.js';
import { tempDir } from './temp-dir.js';

// The daemon's parts assembled in the test process, as main.ts assembles
// them, so a test can move a simulated input exactly when it wants and look
// at the server's side of a connection. Clients still talk over real sockets.

/**
 * A simulated Neuron `00` as device 1 on bus SIM, WebSocket on; its inputs
 * only move when a test moves them.
 */
export const STILL_BOARD = stillBoardYaml();

/** STILL_BOARD's YAML, with WebSocket error replies when asked, and more devices (YAML under `devices:`) on its bus. */
export function stillBoardYaml({ errorReplies = false, devices = '' }: { errorReplies?: boolean; devices?: string } = {}): string {
  return `
apis:
  websocket:
    enabled: true${errorReplies ? '\n    error_replies: true' : ''}
comm_channels:
  SIM:
    type: SIMULATOR
    toggle_ms: 0
    devices:
      1:
        model: "00"
${devices}`;
}

export interface Gate {
  runtime: Runtime;
  config: Config;
  baseUrl: string;
  wsUrl: string;
  ws: WebSocketEndpoint | undefined;
  webhook: Webhook | undefined;
  board: SimulatedBoard;
  /** Set digital input `index` (0-based) of the board; the next scan reports it. */
  setInput(index: number, on: boolean): void;
  close(): Promise<void>;
}

export async function startGate(
  yaml: string = STILL_BOARD,
  {
    websocket,
    webhook,
    log = createLogger('CRITICAL'),
    firstStates = false,
    silentUnits = [],
    beforeStart,
    offload,
  }: {
    websocket?: WebSocketOptions;
    webhook?: WebhookOptions;
    log?: Logger;
    /** Send the boards' first states to the webhook once it started, as the daemon does; tests of later changes leave them out. */
    firstStates?: boolean;
    /** Units of the simulated bus that are switched off when the daemon starts (absent boards). */
    silentUnits?: readonly number[];
    /** What the board holds before iogate's first read (an input already on at start-up). */
    beforeStart?: (board: SimulatedBoard) => void;
    offload?: FirmwareOffload;
  } = {},
): Promise<Gate> {
  const dir = tempDir('iogate-gate-');
  const file = join(dir, 'config.yaml');
  writeFileSync(file, confinedYaml(yaml));
  const { config } = loadConfig({ file });
  const runtime = buildRuntime(config, (name) => findModel(name, new Map()), log, { offload });
  for (const unit of silentUnits) [...runtime.simulations.values()][0]!.boards.get(unit)!.silent = true;
  if (beforeStart) beforeStart([...runtime.simulations.values()][0]!.boards.values().next().value as SimulatedBoard);
  await runtime.start();
  const guards = apiGuards(config.apis);
  const hook = config.apis.webhook.enabled ? startWebhook(config.apis.webhook, runtime.feed, log, webhook) : undefined;
  const server = createHttpServer({ registry: runtime.registry, feed: runtime.feed, version: 'test', metrics: runtime, webhook: hook?.stats, ...guards });
  const ws = config.apis.websocket.enabled
    ? attachWebSocket(server, { registry: runtime.registry, feed: runtime.feed, allFiltered: config.apis.websocket.allFiltered }, guards, log, {
        errorReplies: config.apis.websocket.errorReplies,
        ...websocket,
      })
    : undefined;
  if (firstStates) runtime.feed.releaseFirstStates();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const board = [...runtime.simulations.values()][0]!.boards.values().next().value as SimulatedBoard;
  const inputs = board.model.features.find((feature) => feature.type === 'DI');
  if (!inputs || inputs.type !== 'DI') throw new Error('the test board has no digital inputs');
  return {
    runtime,
    config,
    baseUrl: `http://127.0.0.1:${port}`,
    wsUrl: `ws://127.0.0.1:${port}/ws`,
    ws,
    webhook: hook,
    board,
    setInput: (index, on) => board.setBit(inputs.val_reg + Math.floor(index / 16), index % 16, on),
    async close() {
      hook?.stop();
      await ws?.close();
      server.closeAllConnections();
      server.close();
      await runtime.stop();
    },
  };
}

/** Resolves once `condition` holds; checks every few ms, fails after `limitMs`. */
export async function until(condition: () => boolean, what: string, limitMs = 5000): Promise<void> {
  const deadline = Date.now() + limitMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}
