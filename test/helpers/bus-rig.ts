import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { EventEmitter } from 'node:events';
import { apiGuards } from '../../src/api/access/guards.js';
import { createHttpServer } from '../../src/api/http/server.js';
import { attachWebSocket } from '../../src/api/ws/server.js';
import { createLogger } from '../../src/logging/log.js';
import { brain00 } from '../../src/boards/builtin/neuron.js';
import type { BoardModel } from '../../src/boards/model.js';
import { loadConfig } from '../../src/config/load.js';
import { ModbusSlave } from '../../src/devices/board/modbus-slave.js';
import { buildDevices } from '../../src/devices/build.js';
import { ScanLoop } from '../../src/devices/slave/scan-loop.js';
import { SlaveUnit, type SlaveState } from '../../src/devices/slave/slave-unit.js';
import { ModbusBus, type BusOptions } from '../../src/modbus/bus.js';
import { ChangeFeed } from '../../src/registry/feed.js';
import { Registry } from '../../src/registry/registry.js';
import type { Link } from '../../src/transport/link.js';
import { FaultyLine } from './faulty-line.js';

// The daemon's core assembled by hand around links the tests control: buses,
// slaves with their devices and scan loops, the registry and the HTTP API.
// Slave state changes are events, so tests await them instead of sleeping.

export interface RigSlave {
  name: string;
  unit: number;
  model: BoardModel;
  periodMs?: number;
  /** false: read once (EVOK's scan_enabled: false). */
  scanEnabled?: boolean;
}

export interface RigBus {
  link: Link;
  slaves: RigSlave[];
  options?: Partial<BusOptions>;
}

export interface Rig {
  buses: ModbusBus[];
  slaves: SlaveUnit[];
  registry: Registry;
  baseUrl: string;
  /** The WebSocket endpoint, `ws://…/ws`. */
  wsUrl: string;
  /** Log lines of buses and slaves, as `LEVEL message`. */
  logs: string[];
  /** Every slave state change, in order. */
  transitions: Array<{ name: string; state: SlaveState }>;
  slave(name: string): SlaveUnit;
  /** Resolves when the named slave reaches `state` (at once if it is there already). */
  whenState(name: string, state: SlaveState): Promise<void>;
  /** Resolves after the named slave completes `count` more scans. */
  scans(name: string, count: number): Promise<void>;
  /** Resolves once `condition` holds after one of the named slave's scans (rejects after `timeoutMs`). */
  afterScanWhen(name: string, condition: () => boolean, timeoutMs?: number): Promise<void>;
  get(path: string): Promise<{ status: number; body: string }>;
  post(path: string, form: Record<string, string>): Promise<{ status: number; body: string }>;
  stop(): Promise<void>;
}

export async function startRig(busSpecs: RigBus[]): Promise<Rig> {
  const registry = new Registry();
  const feed = new ChangeFeed();
  const events = new EventEmitter();
  events.setMaxListeners(0);
  const buses: ModbusBus[] = [];
  const slaves: SlaveUnit[] = [];
  const loops: Array<{ bus: ModbusBus; loop: ScanLoop }> = [];
  const logs: string[] = [];
  const log = (level: 'info' | 'warn' | 'error', message: string) => logs.push(`${level} ${message}`);
  const transitions: Rig['transitions'] = [];
  let globalId = 0;
  busSpecs.forEach((spec, index) => {
    const bus = new ModbusBus(spec.link, { name: `bus${index + 1}`, timeoutMs: 50, retries: 1, reconnectMs: 20, maxReconnectMs: 200, log, ...spec.options });
    buses.push(bus);
    for (const { name, unit, model, periodMs = 20, scanEnabled = true } of spec.slaves) {
      const slave = new SlaveUnit(
        name,
        unit,
        model,
        bus,
        periodMs,
        (changed, _devices, stateChanged) => {
          registry.invalidate();
          if (!stateChanged) return;
          transitions.push({ name: changed.name, state: changed.state });
          events.emit(`state:${changed.name}`, changed.state);
        },
        log,
      );
      const devices = buildDevices(slave, { globalId: ++globalId, log: () => {} });
      for (const device of devices) registry.add(device);
      registry.add(new ModbusSlave(slave, { type: spec.link.framing, spec: spec.link.spec }));
      // Count scans by wrapping the slave's scan: the loop calls it once per slot.
      const scan = slave.scan.bind(slave);
      slave.scan = async (now) => {
        await scan(now);
        events.emit(`scan:${name}`);
      };
      slaves.push(slave);
      loops.push({ bus, loop: new ScanLoop(slave, periodMs, scanEnabled) });
    }
  });
  // The built-in configuration's access rules: no tokens, as EVOK.
  const guards = apiGuards(loadConfig({}).config.apis);
  const server = createHttpServer({ registry, feed, version: 'test', metrics: { buses, slaves }, ...guards });
  const websocket = attachWebSocket(server, { registry, feed, allFiltered: false }, guards, createLogger('ERROR'));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  for (const bus of buses) bus.start();
  for (const { bus, loop } of loops) void bus.whenConnected().then(() => loop.start());

  const slave = (name: string) => {
    const found = slaves.find((candidate) => candidate.name === name);
    if (!found) throw new Error(`no slave ${name}`);
    return found;
  };
  const request = async (path: string, init?: RequestInit) => {
    const response = await fetch(baseUrl + path, init);
    return { status: response.status, body: await response.text() };
  };
  return {
    buses,
    slaves,
    registry,
    baseUrl,
    wsUrl: `${baseUrl.replace('http', 'ws')}/ws`,
    logs,
    transitions,
    slave,
    whenState(name, state) {
      if (slave(name).state === state) return Promise.resolve();
      return new Promise((resolve) => {
        const listener = (now: SlaveState) => {
          if (now !== state) return;
          events.off(`state:${name}`, listener);
          resolve();
        };
        events.on(`state:${name}`, listener);
      });
    },
    scans(name, count) {
      return new Promise((resolve) => {
        let left = count;
        const listener = () => {
          if (--left > 0) return;
          events.off(`scan:${name}`, listener);
          resolve();
        };
        events.on(`scan:${name}`, listener);
      });
    },
    afterScanWhen(name, condition, timeoutMs = 5000) {
      if (condition()) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          events.off(`scan:${name}`, listener);
          reject(new Error(`condition not met within ${timeoutMs} ms of scans of slave ${name}`));
        }, timeoutMs);
        const listener = () => {
          if (!condition()) return;
          clearTimeout(timer);
          events.off(`scan:${name}`, listener);
          resolve();
        };
        events.on(`scan:${name}`, listener);
      });
    },
    get: (path) => request(path),
    post: (path, form) =>
      request(path, {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(form).toString(),
      }),
    async stop() {
      for (const { loop } of loops) loop.stop();
      await Promise.all(buses.map((bus) => bus.stop()));
      await websocket.close();
      server.closeAllConnections();
      server.close();
    },
  };
}

/**
 * Neuron brain boards (`00`) at units 1, 2, … on one in-memory line the test
 * can break (FaultyLine), one per name in `names`, each scanned every 20 ms;
 * resolves once all of them are online.
 */
export async function startBrainsOnFaultyLine(names: readonly string[], options: Partial<BusOptions> = {}): Promise<{ line: FaultyLine; rig: Rig }> {
  const line = new FaultyLine(names.map((_, i) => ({ unit: i + 1, model: brain00 })));
  const rig = await startRig([{ link: line, slaves: names.map((name, i) => ({ name, unit: i + 1, model: brain00, periodMs: 20 })), options }]);
  await Promise.all(names.map((name) => rig.whenState(name, 'online')));
  return { line, rig };
}
