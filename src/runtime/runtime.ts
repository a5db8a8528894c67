import type { BoardModel } from '../boards/model.js';
import type { BusConfig, Config, OneWireBusConfig } from '../config/types.js';
import { DigitalInput } from '../devices/digital/di.js';
import { AliasManager } from '../devices/alias-manager.js';
import type { Device } from '../devices/device.js';
import { buildDevices } from '../devices/build.js';
import { DeviceInfo } from '../devices/board/device-info.js';
import { CounterBook } from '../devices/digital/counter-book.js';
import { QualityWatch, type QualitySource } from '../devices/quality/quality-watch.js';
import { ModbusSlave, type SlaveLink } from '../devices/board/modbus-slave.js';
import { CycleGuard } from '../devices/slave/cycle-guard.js';
import { InputScanLoop } from '../devices/slave/input-scan-loop.js';
import { ScanLoop } from '../devices/slave/scan-loop.js';
import { SlaveUnit, type ChangeListener } from '../devices/slave/slave-unit.js';
import type { Logger } from '../logging/log.js';
import { ModbusBus } from '../modbus/bus.js';
import { buildOneWireBuses, type OneWireSetup } from '../onewire/assemble.js';
import { OneWireSensor } from '../onewire/sensor.js';
import { PersistedAliases } from '../registry/alias-book.js';
import { AliasSaver, readAliasFile } from '../registry/alias-store.js';
import { ChangeFeed } from '../registry/feed.js';
import { Registry } from '../registry/registry.js';
import { createLink } from '../transport/create-link.js';
import { tracedLink } from '../transport/traced-link.js';
import { OutputControl } from '../control/output-control.js';
import type { Simulation } from '../sim/simulation.js';
import { AutomationEngine } from '../automations/engine.js';
import type { FirmwareOffload } from '../automations/offload.js';
import { controlGuard } from '../automations/offload/guard.js';
import { reconcileFirmwareOffload } from '../automations/offload/reconcile.js';
import { slaveOffloadDeps } from '../automations/offload/slave-deps.js';
import { pollRateOf, slaveReadPlan } from './planned-reads.js';

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
  /** Counter totals of the DIs that keep one (and where they are saved). */
  counters: CounterBook;
  /** The control layer: interlocks, pulses, covers. */
  control: OutputControl;
  /** `automations:`, writing through the same path as every API. */
  automations: AutomationEngine;
  /** Ends pulses and stops covers, stops polling and the buses, and writes unsaved alias and output state, and counter totals. */
  stop(): Promise<void>;
}

/** What a reload changed in the core, for the log and the reply of `POST /config/reload`. */
export interface CoreReloadReport {
  kept: string[];
  restarted: string[];
  started: string[];
  stopped: string[];
}

/** One configured bus with everything built for it: what a reload keeps, or stops and rebuilds, as a whole. */
interface BusUnit {
  /** The configuration it was built from, as text: equal text = nothing to do on reload. */
  key: string;
  devices: Device[];
  start(): void;
  stop(): Promise<void>;
  /** Resolves once its slaves or sensors were read once. */
  firstScan: Promise<unknown>;
}

export interface ReloadableRuntime extends Runtime {
  /**
   * Applies a new (already validated) configuration's buses: unchanged ones
   * keep polling untouched, changed ones are stopped and built anew, removed
   * ones stop, new ones start. Aliases of rebuilt devices are kept.
   */
  reload(config: Config, findModel: (name: string) => BoardModel | undefined, options?: { traceModbus?: boolean }): Promise<CoreReloadReport>;
}

export function buildRuntime(
  config: Config,
  findModel: (name: string) => BoardModel | undefined,
  log: Logger,
  options: { traceModbus?: boolean; offload?: FirmwareOffload } = {},
): ReloadableRuntime {
  const registry = new Registry();
  const feed = new ChangeFeed();
  // Live arrays: metrics, the stats line and the cycle guard read them, and a reload changes them in place.
  const buses: ModbusBus[] = [];
  const slaves: SlaveUnit[] = [];
  const oneWire: OneWireSetup[] = [];
  const simulations = new Map<string, Simulation>();
  const slaveDevices = new Map<SlaveUnit, ModbusSlave>();
  const units = new Map<string, BusUnit>();
  const plannedRates = new Map<string, number>();
  let started = false;
  // Read once at start-up: a reload keeps the stale rule and the counters' save interval.
  const { quality } = config;
  const staleRule = { periods: quality.stalePeriods, minMs: quality.staleMinMs };
  const counters = new CounterBook(config.stateDir, quality.counterSaveMs, log);

  // Slaves that were online once: the first time, their whole state goes to EVOK's listeners.
  const cameOnline = new WeakSet<SlaveUnit>();
  const onChange: ChangeListener = (slave, changed, stateChanged) => {
    registry.invalidate();
    const changes: Device[] = [...changed];
    // Going on- or offline is news about the slave itself.
    const slaveDevice = slaveDevices.get(slave);
    if (stateChanged && slaveDevice) changes.push(slaveDevice);
    let firstState: readonly Device[] | undefined;
    if (!cameOnline.has(slave) && (slave.state === 'online' || slave.state === 'degraded')) {
      cameOnline.add(slave);
      firstState = slave.devices;
    }
    // The feed itself keeps non-event devices away from listeners that follow EVOK's event set.
    feed.publish(changes, firstState);
  };

  // Buses, slaves and the cycle guard log at two levels.
  const logAt = (level: 'info' | 'warn' | 'error', message: string) => (level === 'error' ? log.error(message) : level === 'warn' ? log.warn(message) : log.info(message));
  let globalId = 0;

  /** Registers a device as part of a unit, so the unit can take it out again. */
  const register = (unitDevices: Device[]) => ({
    add(device: Device) {
      registry.add(device);
      unitDevices.push(device);
    },
    find: registry.find.bind(registry),
    invalidate: registry.invalidate.bind(registry),
  });

  const buildModbusUnit = (busConfig: BusConfig, findBoard: (name: string) => BoardModel | undefined, trace: boolean): BusUnit => {
    const devices: Device[] = [];
    const add = register(devices).add;
    const models = resolveModels(busConfig, findBoard, log);
    const { link, simulation } = createLink(busConfig, models);
    const bus = new ModbusBus(trace ? tracedLink(link, busConfig.name, log) : link, {
      name: busConfig.name,
      timeoutMs: busConfig.timeoutMs,
      retries: busConfig.retries,
      log: logAt,
    });
    const unitSlaves: SlaveUnit[] = [];
    const loops: Array<ScanLoop | InputScanLoop> = [];
    let plannedPollRate = 0;
    if (busConfig.deviceInfo) add(new DeviceInfo(busConfig.deviceInfo.model, busConfig.deviceInfo));
    for (const deviceConfig of busConfig.devices) {
      const model = models.get(deviceConfig.name);
      if (!model) continue;
      globalId++;
      const period = deviceConfig.scanFrequency > 0 ? 1000 / deviceConfig.scanFrequency : 0;
      const slave = new SlaveUnit(deviceConfig.name, deviceConfig.slaveId, model, bus, period, onChange, logAt);
      slave.staleRule = staleRule;
      const { counterTotal } = deviceConfig;
      const wanted = (circuit: string) => (typeof counterTotal === 'boolean' ? counterTotal : counterTotal.includes(circuit));
      const context = { globalId, log: (message: string) => log.warn(message), counters: { book: counters, wanted, log: (message: string) => log.info(message) } };
      const built = buildDevices(slave, context);
      for (const device of built) {
        if (device instanceof DigitalInput) device.counterMeta = deviceConfig.counters?.[device.circuit];
        add(device);
      }
      for (const circuit of Object.keys(deviceConfig.counters ?? {})) {
        if (!built.some((device) => device instanceof DigitalInput && device.circuit === circuit)) {
          log.warn(`counters: ${circuit} is no digital input of device ${deviceConfig.name}; its unit is not used`);
        }
      }
      const slaveDevice = new ModbusSlave(slave, slaveLink(busConfig), { model: model.name, product: productOf(busConfig, deviceConfig, model.name) });
      slaveDevices.set(slave, slaveDevice);
      add(slaveDevice);
      if (deviceConfig.deviceInfo) add(new DeviceInfo(deviceConfig.name, deviceConfig.deviceInfo));
      unitSlaves.push(slave);
      const plan = slaveReadPlan(model, deviceConfig);
      plannedPollRate += pollRateOf(plan);
      loops.push(new ScanLoop(slave, period, deviceConfig.scanEnabled));
      if (plan.input) loops.push(new InputScanLoop(slave, plan.input.periodMs, plan.input.blocks));
    }
    buses.push(bus);
    registry.modbusBuses.add(busConfig.name);
    slaves.push(...unitSlaves);
    if (simulation) simulations.set(busConfig.name, simulation);
    plannedRates.set(busConfig.name, plannedPollRate);
    return {
      key: modbusKey(busConfig, findBoard, trace),
      devices,
      firstScan: Promise.all(unitSlaves.map((slave) => slave.firstScan)),
      start() {
        simulation?.start();
        bus.start();
        // The first scan waits for its line, so a slow connect is not counted as a failed scan.
        for (const loop of loops) void bus.whenConnected().then(() => loop.start());
      },
      async stop() {
        for (const loop of loops) loop.stop();
        simulation?.stop();
        await bus.stop();
        removeFrom(buses, [bus]);
        registry.modbusBuses.delete(busConfig.name);
        removeFrom(slaves, unitSlaves);
        for (const slave of unitSlaves) slaveDevices.delete(slave);
        if (simulations.get(busConfig.name) === simulation) simulations.delete(busConfig.name);
        plannedRates.delete(busConfig.name);
      },
    };
  };

  const buildOneWireUnit = (busConfig: OneWireBusConfig): BusUnit => {
    const devices: Device[] = [];
    // Sensors are found after start-up; each takes its saved alias then.
    const [setup] = buildOneWireBuses([busConfig], register(devices), feed, log, (device) => {
      if (device instanceof OneWireSensor) device.staleRule = staleRule;
      aliases.adopt(device);
    });
    oneWire.push(setup!);
    return {
      key: unitKey({ oneWire: busConfig }),
      devices,
      firstScan: setup!.bus.firstScan,
      start: () => setup!.bus.start(),
      async stop() {
        setup!.bus.stop();
        removeFrom(oneWire, [setup!]);
      },
    };
  };

  const buildUnits = (next: Config, findBoard: (name: string) => BoardModel | undefined, trace: boolean): Map<string, () => BusUnit> => {
    const builders = new Map<string, () => BusUnit>();
    for (const busConfig of next.buses) builders.set(`modbus:${busConfig.name}`, () => buildModbusUnit(busConfig, findBoard, trace));
    // After the boards, so a 1-Wire bus's `owpower` finds its coil.
    for (const busConfig of next.oneWireBuses) builders.set(`1-wire:${busConfig.name}`, () => buildOneWireUnit(busConfig));
    return builders;
  };

  const keyOf = (name: string, next: Config, findBoard: (name: string) => BoardModel | undefined, trace: boolean): string => {
    const [kind, busName] = [name.slice(0, name.indexOf(':')), name.slice(name.indexOf(':') + 1)];
    const busConfig = next.buses.find((bus) => bus.name === busName);
    if (kind === 'modbus') return busConfig ? modbusKey(busConfig, findBoard, trace) : '';
    return unitKey({ oneWire: next.oneWireBuses.find((bus) => bus.name === busName) });
  };

  const saver = new AliasSaver(config.aliasFile, ALIAS_SAVE_DELAY_MS, (message) => log.error(message));
  const aliases = new PersistedAliases(registry, saver);

  for (const [name, build] of buildUnits(config, findModel, options.traceModbus === true)) units.set(name, build());

  registry.add(new AliasManager(aliases));
  const { aliases: saved, warnings } = readAliasFile(config.aliasFile);
  for (const warning of [...warnings, ...aliases.attach(saved)]) log.warn(warning);

  const cycleGuard = new CycleGuard(buses, slaves, logAt);

  const sensorSources = new WeakMap<OneWireSensor, QualitySource>();
  const sensorSource = (sensor: OneWireSensor): QualitySource => {
    let source = sensorSources.get(sensor);
    if (!source) sensorSources.set(sensor, (source = { quality: (now) => sensor.pointMeta(now).quality, devices: [sensor] }));
    return source;
  };
  // Live: follows the slaves and sensors a reload adds or removes.
  function* qualitySources(): Iterable<QualitySource> {
    yield* slaves;
    for (const { bus } of oneWire) for (const sensor of bus.sensors.values()) yield sensorSource(sensor);
  }
  const qualityWatch = new QualityWatch(qualitySources, (devices) => feed.publishQuality(devices));

  // After the aliases: interlocks and covers may name outputs by alias.
  const control = new OutputControl(registry, feed, log, config.stateDir, config.interlocks, config.covers);
  registry.writeControl = control;
  // After the control layer: an automation writes like any client, through it.
  let offloadSettings: Pick<Config, 'stateDir' | 'interlocks' | 'covers'> = config;
  const automations = new AutomationEngine({
    registry,
    feed,
    log,
    stateDir: config.stateDir,
    // The boards' DirectSwitch, unless a test brings its own: dependencies made
    // at each call from the slaves and settings in force (a reload rebuilds slaves).
    offload:
      options.offload ??
      ((requests) =>
        reconcileFirmwareOffload(
          slaveOffloadDeps({
            slaves,
            stateDir: offloadSettings.stateDir,
            guard: controlGuard(registry, offloadSettings.interlocks, offloadSettings.covers),
            log: (level, message) => (level === 'warn' ? log.warn(message) : log.info(message)),
            resolve: (name) => {
              const device = registry.byName(name);
              return device && { type: device.type, circuit: device.circuit };
            },
          }),
          requests,
        )),
    failSafeOff: (output, why, done) => control.failSafeOff(output, why, done),
  });
  automations.configure(config.automations, config.location);

  const runtime: ReloadableRuntime = {
    registry,
    feed,
    buses,
    slaves,
    oneWire,
    simulations,
    counters,
    get plannedPollRate() {
      let sum = 0;
      for (const rate of plannedRates.values()) sum += rate;
      return sum;
    },
    control,
    automations,
    async start() {
      started = true;
      for (const unit of units.values()) unit.start();
      let bound: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all([...units.values()].map((unit) => unit.firstScan)),
        new Promise((resolve) => (bound = setTimeout(resolve, FIRST_SCAN_BOUND_MS))),
      ]);
      clearTimeout(bound);
      // The watchdog timeouts are known once the boards were read.
      cycleGuard.start();
      qualityWatch.start();
      // What a crash left switched on is known once the boards were read.
      control.start();
      // Last: its baselines are the first scan's readings, and its writes pass the control layer's rules.
      await automations.start();
    },
    async stop() {
      // While the buses still run: sequences stop, pulses end and covers stop before iogate goes.
      await automations.stop();
      await control.stop();
      cycleGuard.stop();
      qualityWatch.stop();
      await Promise.all([saver.flush(), ...[...units.values()].map((unit) => unit.stop())]);
      // After the buses stopped: no reading can move a total past what is saved.
      await counters.flush();
    },
    async reload(next, findBoard, reloadOptions = {}) {
      const trace = reloadOptions.traceModbus === true;
      const report: CoreReloadReport = { kept: [], restarted: [], started: [], stopped: [] };
      const builders = buildUnits(next, findBoard, trace);
      const changed = new Set<string>();
      for (const [name, unit] of units) {
        if (!builders.has(name) || keyOf(name, next, findBoard, trace) !== unit.key) changed.add(name);
      }
      // A 1-Wire bus's do_reset pulses a board's owpower coil, found when the bus is built: with that board's bus rebuilt, it is rebuilt too.
      for (const bus of next.oneWireBuses) {
        const board = next.buses.find((modbus) => modbus.devices.some((device) => device.name === bus.owpower));
        const boardBus = board && `modbus:${board.name}`;
        if (boardBus !== undefined && (changed.has(boardBus) || !units.has(boardBus)) && units.has(`1-wire:${bus.name}`)) changed.add(`1-wire:${bus.name}`);
      }
      // Stop first: a changed bus must let go of its serial line before its successor opens it.
      for (const [name, unit] of units) {
        if (!changed.has(name)) {
          report.kept.push(name);
          continue;
        }
        // While its line still runs: the pulses and timeouts of its outputs end now, not on a stopped bus.
        await control.release(unit.devices);
        await unit.stop();
        for (const device of unit.devices) {
          aliases.release(device);
          registry.remove(device);
        }
        units.delete(name);
        (builders.has(name) ? report.restarted : report.stopped).push(name);
      }
      const fresh: BusUnit[] = [];
      for (const [name, build] of builders) {
        if (units.has(name)) continue;
        const unit = build();
        units.set(name, unit);
        fresh.push(unit);
        for (const device of unit.devices) aliases.adopt(device);
        if (!report.restarted.includes(name)) report.started.push(name);
      }
      // Unchanged units keep their place; new ones come after them, as files list buses in any order.
      registry.invalidate();
      if (started) for (const unit of fresh) unit.start();
      for (const unit of fresh) control.adopt(unit.devices);
      // Automations name devices, some of which were just rebuilt.
      automations.rebind();
      offloadSettings = next;
      const changes = await automations.update(next.automations, next.location);
      const moved = [...changes.restarted.map((id) => `${id} restarted`), ...changes.started.map((id) => `${id} started`), ...changes.stopped.map((id) => `${id} stopped`)];
      if (moved.length > 0) log.info(`automations: ${moved.join(', ')}${changes.kept.length > 0 ? `; ${changes.kept.length} kept with their timers` : ''}`);
      return report;
    },
  };
  return runtime;
}

/** A Modbus bus's key includes its boards' register maps: an edited hw-definition file rebuilds the bus. */
function modbusKey(busConfig: BusConfig, findBoard: (name: string) => BoardModel | undefined, trace: boolean): string {
  return unitKey({ busConfig, trace, maps: busConfig.devices.map((device) => findBoard(device.model) ?? null) });
}

/** A unit's configuration as text, without where in the file it was written (an edit above it moves the lines). */
export function unitKey(value: unknown): string {
  return JSON.stringify(value, (key, item: unknown) => (key === 'modelAt' || key === 'modelOrigin' ? undefined : item));
}

function removeFrom<T>(list: T[], gone: readonly T[]): void {
  for (const item of gone) {
    const index = list.indexOf(item);
    if (index >= 0) list.splice(index, 1);
  }
}

/**
 * The Unipi product a board belongs to: the product named as its `model:`,
 * else the bus's device_info model (autogen writes `M503` there for a
 * controller's own boards), else a device's own device_info model when it
 * names more than the board; null when unknown.
 */
function productOf(bus: BusConfig, device: BusConfig['devices'][number], boardModel: string): string | null {
  const named = (model: string | undefined) => (model && model !== 'unknown' && model !== boardModel ? model : undefined);
  return device.product ?? named(bus.deviceInfo?.model) ?? named(device.deviceInfo?.model) ?? null;
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
