import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startMqtt, type MqttBridge } from '../../src/api/mqtt/bridge.js';
import { findModel } from '../../src/boards/resolve.js';
import { loadConfig } from '../../src/config/load.js';
import { createLogger } from '../../src/logging/log.js';
import { buildRuntime, type Runtime } from '../../src/runtime/runtime.js';
import type { SimulatedBoard } from '../../src/sim/simulated-board.js';
import { TestBroker } from './mqtt-broker.js';
import { Observer } from './mqtt-observer.js';
import { tempDir } from './temp-dir.js';

// iogate's core and its MQTT bridge in the test process, on a simulated
// Neuron, so a test can look at the simulated board's registers directly.

export interface MqttSettings {
  port: number;
  clientId?: string;
  enabled?: boolean;
  /** Further lines under `apis.mqtt:`, already indented by four spaces. */
  extra?: string;
  /**
   * `apis.mqtt.protocol`. aedes speaks only 3.1.1, so that is the default here:
   * with `auto` iogate's first attempt (MQTT 5) is refused and it connects a
   * moment later, after clients a test started meanwhile.
   */
  protocol?: 'auto' | '5' | '3.1.1';
  /** Further buses under `comm_channels:`, already indented by two spaces. */
  buses?: string;
  /** Further top-level sections (`covers:`, `interlocks:`), unindented. */
  top?: string;
}

/** A config file for a SIMULATOR bus with one Neuron brain board (`00`) and MQTT (on unless told). */
export function writeMqttConfig({ port, clientId = 'iogate-test', enabled = true, extra = '', buses = '', top = '', protocol = '3.1.1' }: MqttSettings, toggleMs = 0): string {
  const dir = tempDir('iogate-mqtt-');
  const file = join(dir, 'config.yaml');
  writeFileSync(
    file,
    `alias_file: aliases.yaml
apis:
  mqtt:
    enabled: ${enabled}
    address: 127.0.0.1
    port: ${port}
    client-id: ${clientId}
    protocol: ${protocol}
${extra}
comm_channels:
  SIM:
    type: SIMULATOR
    toggle_ms: ${toggleMs}
    devices:
      1:
        model: '00'
${buses}
${top}
`,
  );
  return file;
}

export interface Gateway {
  runtime: Runtime;
  bridge: MqttBridge;
  board: SimulatedBoard;
  log: string[];
  stop(): Promise<void>;
}

export async function startGateway(settings: MqttSettings, toggleMs = 0): Promise<Gateway> {
  const { config } = loadConfig({ file: writeMqttConfig(settings, toggleMs) });
  const log: string[] = [];
  const logger = createLogger('DEBUG', (line) => log.push(line));
  const runtime = buildRuntime(config, (name) => findModel(name, new Map()), logger);
  await runtime.start();
  const bridge = startMqtt({ ...runtime, config: config.apis.mqtt, log: logger });
  return {
    runtime,
    bridge,
    board: runtime.simulations.get('SIM')!.boards.get(1)!,
    log,
    async stop() {
      await bridge.stop();
      await runtime.stop();
    },
  };
}

export interface GatewayOnBroker {
  broker: TestBroker;
  gateway: Gateway;
  /** Subscribed to the topics asked for; it has seen the gateway's `plc/status` online. */
  observer: Observer;
  /** Ends the observer, then the gateway, then the broker. */
  stop(): Promise<void>;
}

/**
 * A broker (aedes), the gateway on it as client `plc`, and an observer of
 * `topics`, which must take in `plc/status`: it resolves once the gateway
 * said it is online, so a test's first publish reaches a subscribed gateway.
 */
export async function startGatewayOnBroker(settings: Omit<MqttSettings, 'port' | 'clientId'>, topics: string[]): Promise<GatewayOnBroker> {
  const broker = await TestBroker.start();
  const gateway = await startGateway({ ...settings, port: broker.port, clientId: 'plc' });
  const observer = await Observer.connect(broker.url, topics);
  await observer.waitFor('plc/status', (text) => text === 'online');
  return {
    broker,
    gateway,
    observer,
    async stop() {
      await observer.close();
      await gateway.stop();
      await broker.stop();
    },
  };
}
