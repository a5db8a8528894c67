import type { BoardModel } from './boards/model.js';
import type { BusConfig, Config } from './config/types.js';
import { AliasManager } from './devices/alias-manager.js';
import type { Device } from './devices/device.js';
import { buildDevices } from './devices/build.js';
import { DeviceInfo } from './devices/board/device-info.js';
import { ModbusSlave, type SlaveLink } from './devices/board/modbus-slave.js';
import { CycleGuard } from './devices/slave/cycle-guard.js';
import { InputScanLoop, inputValueBlocks } from './devices/slave/input-scan-loop.js';
import { ScanLoop } from './devices/slave/scan-loop.js';
import { SlaveUnit, type ChangeListener } from './devices/slave/slave-unit.js';
import type { Logger } from './log.js';
import { ModbusBus } from './modbus/bus.js';
import { buildOneWireBuses, type OneWireSetup } from './onewire/assemble.js';
import { PersistedAliases } from './registry/alias-book.js';
import { AliasSaver, readAliasFile } from './registry/alias-store.js';
import { ChangeFeed } from './registry/feed.js';
import { Registry } from './registry/registry.js';
import { createLink } from './transport/create-link.js';
import { OutputControl } from './control/output-control.js';
import type { Simulation } from './sim/simulation.js';

// Assembles the daemon's core from a configuration: buses, slaves, devices,
// the registry, the change feed and the alias file. The APIs are attached on
// top of this.

/** Alias changes arriving within this time cost one write of the alias file. */
const ALIAS_SAVE_DELAY_MS = 1000;

/** How long start-up waits for absent or slow slaves before serving anyway. */
const FIRST_SCAN_BOUND_MS = 1000;

export interface Runtime {
  registry: Registry;
  feed: ChangeFeed;
  buses: ModbusBus[];
  slaves: SlaveUnit[];
  /** 1-Wire buses (owserver), beside the Modbus ones. */
  oneWire: OneWireSetup[];
  /** Simulated boards of SIMULATOR buses, by bus name then unit id. */
  simulations: Map<string, Simulation>;
  /**
   * Modbus reads per second the scan schedules ask for: each block is read on
   * every `frequency`-th scan, plus the input reads of `input_scan_frequency`. Unthrottled (scan_frequency 0) and scan-disabled
   * slaves have no planned rate and are left out.
   */
  plannedPollRate: number;
  /**
   * Start buses and scans; resolves once every slave was scanned once (or
   * after a bound), so the first API answers carry values rather than nulls.
   */
  start(): Promise<void>;
  /** The control layer: interlocks, pulses, covers. */
  control: OutputControl;
  /** Ends pulses and stops covers, stops polling and the buses, and writes unsaved alias and output state. */
  stop(): Promise<void>;
}

export function buildRuntime(config: Config, findModel: (name: string) => BoardModel | undefined, log: Logger): Runtime {
  const registry = new Registry();
  const feed = new ChangeFeed();
  const buses: ModbusBus[] = [];
  const slaves: SlaveUnit[] = [];
  const loops: Array<{ bus: ModbusBus; loop: ScanLoop | InputScanLoop }> = [];
  const simulations = new Map<string, Simulation>();
  const slaveDevices = new Map<SlaveUnit, ModbusSlave>();

  const onChange: ChangeListener = (slave, changed, stateChanged) => {
    registry.invalidate();
    const changes: Device[] = [...changed];
    // Going on- or offline is news about the slave itself.
    const slaveDevice = slaveDevices.get(slave);
    if (stateChanged && slaveDevice) changes.push(slaveDevice);
    // The feed itself keeps non-event devices away from listeners that follow EVOK's event set.
    feed.publish(changes);
  };

  // Buses, slaves and the cycle guard log at two levels.
  const logAt = (level: 'info' | 'warn' | 'error', message: string) => (level === 'error' ? log.error(message) : level === 'warn' ? log.warn(message) : log.info(message));
  let globalId = 0;
  let plannedPollRate = 0;
  for (const busConfig of config.buses) {
    const models = resolveModels(busConfig, findModel, log);
    const { link, simulation } = createLink(busConfig, models);
    if (simulation) simulations.set(busConfig.name, simulation);
    const bus = new ModbusBus(link, {
      name: busConfig.name,
      timeoutMs: busConfig.timeoutMs,
      retries: busConfig.retries,
      log: logAt,
    });
    buses.push(bus);
    if (busConfig.deviceInfo) registry.add(new DeviceInfo(busConfig.deviceInfo.model, busConfig.deviceInfo));
    for (const deviceConfig of busConfig.devices) {
      const model = models.get(deviceConfig.name);
      if (!model) continue;
      globalId++;
      const period = deviceConfig.scanFrequency > 0 ? 1000 / deviceConfig.scanFrequency : 0;
      const slave = new SlaveUnit(deviceConfig.name, deviceConfig.slaveId, model, bus, period, onChange, logAt);
      for (const device of buildDevices(slave, { globalId, log: (message) => log.warn(message) })) registry.add(device);
      const slaveDevice = new ModbusSlave(slave, slaveLink(busConfig), { model: model.name, product: productOf(busConfig, deviceConfig, model.name) });
      slaveDevices.set(slave, slaveDevice);
      registry.add(slaveDevice);
      if (deviceConfig.deviceInfo) registry.add(new DeviceInfo(deviceConfig.name, deviceConfig.deviceInfo));
      slaves.push(slave);
      if (deviceConfig.scanEnabled && period > 0) {
        for (const block of model.blocks) plannedPollRate += 1000 / period / block.frequency;
      }
      loops.push({ bus, loop: new ScanLoop(slave, period, deviceConfig.scanEnabled) });
      if (deviceConfig.scanEnabled && deviceConfig.inputScanFrequency > 0) {
        const blocks = inputValueBlocks(model, slave.cache);
        loops.push({ bus, loop: new InputScanLoop(slave, 1000 / deviceConfig.inputScanFrequency, blocks) });
        plannedPollRate += deviceConfig.inputScanFrequency * blocks.length;
      }
    }
  }

  // After the boards, so a bus's `owpower` finds its coil.
  // Sensors are found after start-up; each takes its saved alias then.
  const oneWire = buildOneWireBuses(config.oneWireBuses, registry, feed, log, (device) => aliases.adopt(device));

  const saver = new AliasSaver(config.aliasFile, ALIAS_SAVE_DELAY_MS, (message) => log.error(message));
  const aliases = new PersistedAliases(registry, saver);
  registry.add(new AliasManager(aliases));
  const { aliases: saved, warnings } = readAliasFile(config.aliasFile);
  for (const warning of [...warnings, ...aliases.attach(saved)]) log.warn(warning);

  const cycleGuard = new CycleGuard(buses, slaves, logAt);

  // After the aliases: interlocks and covers may name outputs by alias.
  const control = new OutputControl(registry, feed, log, config.stateDir, config.interlocks, config.covers);
  registry.writeControl = control;

  return {
    registry,
    feed,
    buses,
    slaves,
    oneWire,
    simulations,
    plannedPollRate,
    control,
    async start() {
      for (const simulation of simulations.values()) simulation.start();
      for (const bus of buses) bus.start();
      // The first scan waits for its line, so a slow connect is not counted as a failed scan.
      for (const { bus, loop } of loops) void bus.whenConnected().then(() => loop.start());
      for (const { bus } of oneWire) bus.start();
      let bound: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all([...slaves.map((slave) => slave.firstScan), ...oneWire.map(({ bus }) => bus.firstScan)]),
        new Promise((resolve) => (bound = setTimeout(resolve, FIRST_SCAN_BOUND_MS))),
      ]);
      clearTimeout(bound);
      // The watchdog timeouts are known once the boards were read.
      cycleGuard.start();
      // What a crash left switched on is known once the boards were read.
      control.start();
    },
    async stop() {
      // While the buses still run: pulses end and covers stop before iogate goes.
      await control.stop();
      cycleGuard.stop();
      for (const { loop } of loops) loop.stop();
      for (const { bus } of oneWire) bus.stop();
      for (const simulation of simulations.values()) simulation.stop();
      await Promise.all([saver.flush(), ...buses.map((bus) => bus.stop())]);
    },
  };
}

/**
 * The Unipi product a board belongs to: the bus's device_info model (autogen
 * writes `M503` there for a controller's own boards), else a device's own
 * device_info model when it names more than the board; null when unknown.
 */
function productOf(bus: BusConfig, device: BusConfig['devices'][number], boardModel: string): string | null {
  const named = (model: string | undefined) => (model && model !== 'unknown' && model !== boardModel ? model : undefined);
  return named(bus.deviceInfo?.model) ?? named(device.deviceInfo?.model) ?? null;
}

function slaveLink(bus: BusConfig): SlaveLink {
  switch (bus.type) {
    case 'MODBUSTCP':
      return { type: 'TCP', spec: bus.hostname };
    case 'MODBUSRTU':
      return { type: 'RTU', spec: bus.port };
    case 'SIMULATOR':
      return { type: 'SIMULATOR', spec: bus.name };
  }
}

function resolveModels(
  bus: BusConfig,
  findModel: (name: string) => BoardModel | undefined,
  log: Logger,
): Map<string, BoardModel> {
  const models = new Map<string, BoardModel>();
  for (const device of bus.devices) {
    const model = findModel(device.model);
    if (model) models.set(device.name, model);
    else log.error(`device ${device.name} on bus ${bus.name}: unknown model '${device.model}' (no built-in map or hw definition)`);
  }
  return models;
}
