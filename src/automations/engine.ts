import { join } from 'node:path';
import type { Device } from '../devices/device.js';
import type { Logger } from '../logging/log.js';
import { isOutput, stateOf, type Output } from '../control/output.js';
import type { ChangeFeed } from '../registry/feed.js';
import type { Registry } from '../registry/registry.js';
import { writeDevice } from '../registry/write.js';
import { CoalescingSaver } from '../state/coalescing-saver.js';
import { readJsonState, writeJsonState } from '../state/json-state.js';
import { systemClock, type Clock, type Timer } from './clock.js';
import { CounterDetector, EdgeDetector, PressDetector, QualityDetector, ThresholdDetector, binaryOf, type Detector, type Reading } from './detectors.js';
import { AutomationDevice, type AutomationView } from './device.js';
import { describeAutomation } from './describe.js';
import { NO_FIRMWARE_OFFLOAD, type FirmwareOffload, type OffloadRequest } from './offload.js';
import { inWindow } from './schedule.js';
import { ScheduleTimer, ScheduleWheel } from './schedule-timer.js';
import type { Action, AutomationConfig, Condition, LocationConfig } from './types.js';
import { effectiveZone } from './zoned-time.js';

// The automations engine: reads the change feed, runs each automation's
// detector on the readings of its trigger point, checks its conditions and
// runs its actions through writeDevice, the write path every API uses, so
// interlocks, pulses, covers and ranges apply to it as to any client. The
// rules it keeps (start-up, bad inputs, reload, loops, time) are written
// down in docs/adr/0001-automation-semantics.md.

/** A write caused by an automation counts as its cause for this long: a change seen within it continues the chain. */
const CHAIN_WINDOW_MS = 2000;
/** Automations one input change may set off in a row (A's write triggers B, whose write triggers C, …). */
export const MAX_CHAIN_DEPTH = 8;
/** Runs set off by automations' writes, per automation, within CHAIN_RATE_WINDOW_MS. */
export const MAX_CHAINED_RUNS = 20;
const CHAIN_RATE_WINDOW_MS = 10_000;
/** How long a stop or a reload waits for a safe-state off to land (a board offline); it is retried on after that. */
const SAFE_OFF_WAIT_MS = 3000;
/** Log lines about one automation's failing writes: the first, then one a minute. */
const FAILURE_LOG_MS = 60_000;

export interface EngineDeps {
  registry: Registry;
  feed: ChangeFeed;
  log: Logger;
  stateDir: string;
  clock?: Clock;
  offload?: FirmwareOffload;
  /** The control layer's fail-safe off (retried until it lands); without it, one plain write. */
  failSafeOff?: (output: Output, why: string, done: () => void) => void;
}

/** `automations.json`: outputs that a running sequence (one with a delay) switched, to put in their safe state after a crash. */
interface SavedAutomations {
  sequences: Record<string, string[]>;
}

export interface AutomationFigures {
  id: string;
  runs: number;
  writes: number;
  failedWrites: number;
  enabled: boolean;
  offloaded: boolean;
}

export interface EngineStats {
  runs: number;
  writes: number;
  failedWrites: number;
  loopsStopped: number;
}

/** One automation at run time: its detector, its state shown by the device, its running sequence. */
class Runner implements AutomationView {
  enabled: boolean;
  offloaded = false;
  offloadReason: string | undefined;
  lastTriggered: number | undefined;
  lastResult: string | null = null;
  nextRun: number | undefined;
  runs = 0;
  readonly sentence: string;
  readonly device: AutomationDevice;
  detector: Detector | undefined;
  schedule: ScheduleTimer | undefined;
  /** The sequence running now; a new trigger replaces it (restart). */
  sequence: { cancelled: boolean; timer: Timer | undefined; wake: (() => void) | undefined } | undefined;
  readonly chainedRuns: number[] = [];
  failureLoggedAt = -Infinity;
  /** Writes attributed to it (`automation:<id>`), for /metrics. */
  writes = 0;
  failedWrites = 0;

  constructor(
    readonly config: AutomationConfig,
    readonly key: string,
    private readonly engine: AutomationEngine,
  ) {
    this.enabled = config.enabled;
    this.sentence = describeAutomation(config);
    this.device = new AutomationDevice(this);
  }

  get id(): string {
    return this.config.id;
  }

  setEnabled(enabled: boolean, by: string): void {
    this.engine.setEnabled(this, enabled, by);
  }

  triggerNow(by: string): void {
    this.engine.fire(this, `triggered by ${by}`, undefined, 0, true);
  }
}

export class AutomationEngine {
  private readonly runners = new Map<string, Runner>();
  /** Trigger points → the runners watching them; rebuilt when devices or automations change. */
  private watching = new Map<Device, Runner[]>();
  /** Runners whose trigger point was not found at the last rebind (a 1-Wire sensor not yet found, an alias not yet set). */
  private unbound = 0;
  /** While some are unbound, a change of an unwatched device looks them up again, at most once a second. */
  private lastRebindAt = -Infinity;
  /** Outputs an automation wrote lately, with the chain depth of that write (loop guard). */
  private readonly recentWrites = new Map<Device, { depth: number; at: number }>();
  private readonly clock: Clock;
  /** One timer for every schedule, so idle schedules cost one wake a minute together. */
  private readonly wheel: ScheduleWheel;
  private readonly offload: FirmwareOffload;
  private readonly saver: CoalescingSaver<SavedAutomations>;
  private readonly saved: SavedAutomations = { sequences: {} };
  private readonly found: SavedAutomations;
  private location: LocationConfig = { latitude: undefined, longitude: undefined, timeZone: undefined };
  private unsubscribe: Array<() => void> = [];
  private active = false;
  readonly stats: EngineStats = { runs: 0, writes: 0, failedWrites: 0, loopsStopped: 0 };

  constructor(private readonly deps: EngineDeps) {
    this.clock = deps.clock ?? systemClock;
    this.wheel = new ScheduleWheel(this.clock);
    this.offload = deps.offload ?? NO_FIRMWARE_OFFLOAD;
    const path = join(deps.stateDir, 'automations.json');
    const { data, warning } = readJsonState(path);
    if (warning) deps.log.error(warning);
    this.found = parseSaved(data);
    this.saver = new CoalescingSaver(`automation state to ${path}`, (value) => writeJsonState(path, value), 200, (message) => deps.log.error(message));
  }

  /** The automations in configuration order. */
  list(): readonly AutomationView[] {
    return [...this.runners.values()];
  }

  /** Per automation, what /metrics shows: runs and the writes attributed to it. */
  figures(): AutomationFigures[] {
    return [...this.runners.values()].map(({ id, runs, writes, failedWrites, enabled, offloaded }) => ({ id, runs, writes, failedWrites, enabled, offloaded }));
  }

  /** Sets up the automations (devices in the registry); they act once start() ran. */
  configure(automations: readonly AutomationConfig[], location: LocationConfig): void {
    this.location = location;
    for (const config of automations) this.add(config);
  }

  /**
   * After the first scan and the control layer's start: sequences a crash cut
   * short put their outputs in the safe state, firmware offload is settled,
   * then the detectors take their baselines from the current readings.
   */
  async start(): Promise<void> {
    const { feed, log } = this.deps;
    for (const [id, refs] of Object.entries(this.found.sequences)) {
      this.note(id, refs);
      for (const ref of refs) {
        const why = `automation:${id}: a timed sequence was running when iogate stopped; ${ref} is put in its safe state (off), it is not resumed`;
        log.warn(why);
        void this.safeOff(id, ref, why);
      }
    }
    this.unsubscribe = [
      feed.subscribe((devices) => this.changed(devices), { includeSilent: true }),
      feed.subscribeQuality((devices) => this.changed(devices)),
    ];
    await this.reconcileOffload();
    this.active = true;
    this.rebind();
    for (const runner of this.runners.values()) this.startRunner(runner);
  }

  /** On shutdown: running sequences stop and their outputs go to the safe state now; the state is saved. */
  async stop(): Promise<void> {
    this.active = false;
    for (const stop of this.unsubscribe) stop();
    this.unsubscribe = [];
    const offs: Array<Promise<void>> = [];
    for (const runner of this.runners.values()) offs.push(...this.stopRunner(runner, 'iogate is stopping'));
    await Promise.allSettled(offs);
    await this.saver.flush();
  }

  /**
   * A reload: an unchanged automation keeps its timers and detector; a
   * changed one restarts (its sequence stops, its outputs go to the safe
   * state, its detector takes a new baseline); a removed one stops.
   */
  async update(automations: readonly AutomationConfig[], location: LocationConfig): Promise<{ kept: string[]; restarted: string[]; started: string[]; stopped: string[] }> {
    const report = { kept: [] as string[], restarted: [] as string[], started: [] as string[], stopped: [] as string[] };
    const locationChanged = JSON.stringify(location) !== JSON.stringify(this.location);
    this.location = location;
    const next = new Map(automations.map((config) => [config.id, config]));
    for (const [id, runner] of [...this.runners]) {
      const config = next.get(id);
      if (config && keyOf(config, locationChanged) === runner.key) continue;
      await Promise.allSettled(this.stopRunner(runner, config ? 'its configuration changed' : 'it was removed from the configuration'));
      this.deps.registry.remove(runner.device);
      this.runners.delete(id);
      (config ? report.restarted : report.stopped).push(id);
    }
    // Rebuilt in the file's order.
    const kept = new Map(this.runners);
    this.runners.clear();
    const fresh: Runner[] = [];
    for (const config of automations) {
      const old = kept.get(config.id);
      if (old) {
        this.runners.set(config.id, old);
        report.kept.push(config.id);
        continue;
      }
      fresh.push(this.add(config));
      if (!report.restarted.includes(config.id)) report.started.push(config.id);
    }
    this.deps.registry.invalidate();
    if (this.active) {
      await this.reconcileOffload();
      this.rebind();
      for (const runner of fresh) this.startRunner(runner);
    }
    return report;
  }

  /** Devices were rebuilt (a bus reload): trigger points are looked up again, detectors keep their state only for the same device. */
  rebind(): void {
    const before = new Map<Runner, Device>();
    for (const [device, runners] of this.watching) for (const runner of runners) before.set(runner, device);
    const watching = new Map<Device, Runner[]>();
    this.unbound = 0;
    for (const runner of this.runners.values()) {
      const { trigger } = runner.config;
      if (!('input' in trigger)) continue;
      const device = this.resolve(trigger.input);
      if (!device) {
        this.unbound++;
        continue;
      }
      const list = watching.get(device) ?? [];
      list.push(runner);
      watching.set(device, list);
      // A rebuilt device: what the detector knew was about the old one; the new one's first good reading is a baseline.
      if (before.has(runner) && before.get(runner) !== device) runner.detector?.reset();
    }
    this.watching = watching;
  }

  private add(config: AutomationConfig): Runner {
    const runner = new Runner(config, keyOf(config, false), this);
    this.runners.set(config.id, runner);
    this.deps.registry.add(runner.device);
    return runner;
  }

  private startRunner(runner: Runner): void {
    const { trigger } = runner.config;
    const fire = (cause: string, level?: number) => this.fire(runner, cause, level, this.depthOf(trigger), false);
    const doubleWatched = (input: string) =>
      [...this.runners.values()].some(({ config }) => config.trigger.kind === 'press' && config.trigger.press === 'double' && config.trigger.input === input);
    switch (trigger.kind) {
      case 'edge':
        runner.detector = new EdgeDetector(trigger, fire);
        break;
      case 'press':
        runner.detector = new PressDetector(trigger, doubleWatched(trigger.input), this.clock, fire);
        break;
      case 'threshold':
        runner.detector = new ThresholdDetector(trigger, this.clock, fire);
        break;
      case 'counter':
        runner.detector = new CounterDetector(trigger, fire);
        break;
      case 'quality':
        runner.detector = new QualityDetector(trigger, fire);
        break;
      case 'time':
        runner.schedule = new ScheduleTimer(
          trigger,
          effectiveZone(this.location.timeZone),
          this.location,
          this.clock,
          (cause) => this.fire(runner, cause, undefined, 0, false),
          (why) => {
            this.deps.log.warn(`automation:${runner.id}: ${why}`);
            this.result(runner, `skipped: ${why}`);
          },
          () => {
            runner.nextRun = runner.schedule?.next;
            this.publish(runner);
          },
          this.wheel,
        );
        runner.schedule.start();
        return;
    }
    // The baseline: the first reading is learnt, never taken for an edge.
    const device = this.resolve(trigger.input);
    if (device) runner.detector.observe(this.reading(device, trigger));
    else this.result(runner, `waiting: ${trigger.input} is not a known device`);
  }

  /** Returns the safe-state writes still landing (awaited on shutdown and reload). */
  private stopRunner(runner: Runner, why: string): Array<Promise<void>> {
    runner.detector?.reset();
    runner.schedule?.stop();
    return this.cancelSequence(runner, why);
  }

  private cancelSequence(runner: Runner, why: string, safeState = true): Array<Promise<void>> {
    const sequence = runner.sequence;
    runner.sequence = undefined;
    if (sequence) {
      sequence.cancelled = true;
      sequence.timer?.cancel();
      sequence.wake?.();
    }
    const refs = this.saved.sequences[runner.id];
    if (!refs || !safeState) return [];
    const text = `automation:${runner.id}: its timed sequence stopped because ${why}; ${refs.join(', ')} put in the safe state (off)`;
    this.deps.log.info(text);
    return refs.map((ref) => this.safeOff(runner.id, ref, text));
  }

  /** Switches an output off for a sequence that will not finish; the note goes once it landed. */
  private async safeOff(id: string, ref: string, why: string): Promise<void> {
    const device = this.resolve(ref);
    const { failSafeOff } = this.deps;
    if (device && isOutput(device) && failSafeOff) {
      // The control layer's fail-safe off: retried until it lands (a board offline now), cancelled by a later write.
      // The note stays in the file until it landed, so a crash meanwhile still finds it; a stop waits a bound, not forever.
      await new Promise<void>((resolve) => {
        const bound = this.clock.after(SAFE_OFF_WAIT_MS, resolve);
        failSafeOff(device, why, () => {
          bound.cancel();
          this.unnote(id, ref);
          resolve();
        });
      });
      return;
    }
    try {
      if (!device) throw new Error(`${ref} is not a known device`);
      await this.write(id, device, { value: 0 }, 0);
    } catch (error) {
      this.deps.log.warn(`automation:${id}: ${ref} could not be put in its safe state: ${(error as Error).message} (${why})`);
    }
    this.unnote(id, ref);
  }

  /** One output of a noted sequence is in its safe state: the note keeps the others. */
  private unnote(id: string, ref: string): void {
    const refs = this.saved.sequences[id];
    if (!refs) return;
    this.note(id, refs.filter((other) => other !== ref));
  }

  setEnabled(runner: Runner, enabled: boolean, by: string): void {
    if (runner.enabled === enabled) return;
    runner.enabled = enabled;
    this.deps.log.info(`automation:${runner.id}: ${enabled ? 'enabled' : 'disabled'} by ${by}`);
    if (!enabled) {
      void Promise.allSettled(this.cancelSequence(runner, `it was disabled by ${by}`));
      runner.detector?.reset();
    } else if (runner.detector && 'input' in runner.config.trigger) {
      // Enabled again: a new baseline, so what happened while it was off does not fire now.
      const device = this.resolve(runner.config.trigger.input);
      if (device) runner.detector.observe(this.reading(device, runner.config.trigger));
    }
    this.publish(runner);
  }

  /** A detector fired (or a client asked): loop guard, conditions, then the actions. */
  fire(runner: Runner, cause: string, level: number | undefined, depth: number, manual: boolean): void {
    if (!this.active || (!runner.enabled && !manual)) return;
    if (runner.offloaded && !manual) return;
    if (depth > 0) {
      const now = this.clock.monotonic();
      runner.chainedRuns.push(now);
      while (runner.chainedRuns.length > 0 && runner.chainedRuns[0]! < now - CHAIN_RATE_WINDOW_MS) runner.chainedRuns.shift();
      const tooDeep = depth > MAX_CHAIN_DEPTH;
      if (tooDeep || runner.chainedRuns.length > MAX_CHAINED_RUNS) {
        const why = tooDeep
          ? `a chain of ${depth} automations' writes led to it (at most ${MAX_CHAIN_DEPTH})`
          : `automations' writes set it off more than ${MAX_CHAINED_RUNS} times within ${CHAIN_RATE_WINDOW_MS / 1000} s`;
        this.stats.loopsStopped++;
        this.deps.log.error(`automation:${runner.id}: disabled, a loop: ${why}; enable it again (POST /rest/automation/${runner.id} enabled=1) once the rules are fixed`);
        runner.chainedRuns.length = 0;
        this.setEnabled(runner, false, 'the loop guard');
        this.result(runner, `disabled: loop (${why})`);
        return;
      }
    }
    const unmet = runner.config.conditions.find((condition) => !this.holds(condition));
    if (unmet) {
      this.deps.log.debug(`automation:${runner.id}: ${cause}, but a condition does not hold`);
      this.result(runner, `not run: a condition did not hold (${cause})`);
      return;
    }
    void this.run(runner, cause, level, depth);
  }

  private async run(runner: Runner, cause: string, level: number | undefined, depth: number): Promise<void> {
    // A new trigger restarts a running sequence (a staircase's restart is the pulse's own). Its
    // outputs are not put in the safe state first: the new run takes them over, with no off-on blink.
    this.cancelSequence(runner, 'a new trigger restarted it', false);
    const sequence = { cancelled: false, timer: undefined as Timer | undefined, wake: undefined as (() => void) | undefined };
    const timed = runner.config.actions.some((action) => action.kind === 'delay');
    if (timed) {
      runner.sequence = sequence;
      const refs = [...new Set(runner.config.actions.flatMap((action) => ('outputs' in action && action.kind !== 'pulse' && action.kind !== 'staircase' ? action.outputs : [])))];
      // Written before anything is switched: a crash mid-sequence must find it.
      this.note(runner.id, refs);
      await this.saver.flush();
    }
    runner.runs++;
    this.stats.runs++;
    runner.lastTriggered = this.clock.wall();
    this.deps.log.debug(`automation:${runner.id}: runs (${cause})`);
    const failures: string[] = [];
    for (const action of runner.config.actions) {
      if (sequence.cancelled) return;
      if (action.kind === 'delay') {
        await new Promise<void>((resolve) => {
          sequence.wake = resolve;
          sequence.timer = this.clock.after(action.seconds * 1000, resolve);
        });
        continue;
      }
      // A failed step is reported, and the next steps still run: a later "off" must not be lost to an earlier failure.
      try {
        await this.act(runner, action, level, depth);
      } catch (error) {
        failures.push((error as Error).message);
      }
    }
    if (sequence.cancelled) return;
    if (timed && runner.sequence === sequence) {
      runner.sequence = undefined;
      this.note(runner.id, undefined);
    }
    if (failures.length > 0) {
      const now = this.clock.monotonic();
      if (now - runner.failureLoggedAt >= FAILURE_LOG_MS) {
        runner.failureLoggedAt = now;
        this.deps.log.warn(`automation:${runner.id}: ${cause}: ${failures.join('; ')}`);
      }
    }
    this.result(runner, failures.length > 0 ? `failed: ${failures.join('; ')}` : `ok: ${cause}`);
  }

  private async act(runner: Runner, action: Action, level: number | undefined, depth: number): Promise<void> {
    const id = runner.id;
    switch (action.kind) {
      case 'delay':
        return;
      case 'enable': {
        const target = this.runners.get(action.automation);
        if (!target) throw new Error(`no automation ${action.automation}`);
        this.setEnabled(target, action.enabled, `automation:${id}`);
        return;
      }
      case 'cover': {
        const cover = this.deps.registry.find('cover', action.cover);
        if (!cover) throw new Error(`no cover ${action.cover}`);
        await this.write(id, cover, action.command !== undefined ? { command: action.command } : { position: action.position }, depth);
        return;
      }
      default: {
        const failures: string[] = [];
        // A scene: every output at once, each through the write path; one refusal does not hold back the others.
        await Promise.all(
          action.outputs.map(async (ref) => {
            try {
              const device = this.resolve(ref);
              if (!device) throw new Error('not a known device');
              await this.write(id, device, this.paramsFor(action, device, level), depth);
            } catch (error) {
              failures.push(`${ref}: ${(error as Error).message}`);
            }
          }),
        );
        if (failures.length > 0) throw new Error(failures.join('; '));
      }
    }
  }

  private paramsFor(action: Action, device: Device, level: number | undefined): Record<string, unknown> {
    switch (action.kind) {
      case 'set':
        return { value: action.value };
      case 'toggle': {
        if (!isOutput(device)) throw new Error('only do, ro and led outputs can be toggled');
        const state = stateOf(device);
        if (state === 'unknown') throw new Error('its state is unknown (board offline?), not toggled');
        return { value: state === 'on' ? 0 : 1 };
      }
      case 'pulse':
        return { value: 1, pulse_ms: action.ms };
      case 'staircase':
        return { value: 1, pulse_ms: Math.round(action.seconds * 1000) };
      case 'follow':
        if (level === undefined) throw new Error('follow needs the input level (runs on the input, not by hand)');
        return { value: action.inverted ? 1 - level : level };
      default:
        throw new Error(`no output write for ${action.kind}`);
    }
  }

  /** The one write path, attributed to the automation in the log and its figures. */
  private async write(id: string, device: Device, params: Record<string, unknown>, depth: number): Promise<void> {
    this.stats.writes++;
    const runner = this.runners.get(id);
    if (runner) runner.writes++;
    try {
      await writeDevice(this.deps.registry, this.deps.feed, device, params, undefined, { who: `automation:${id}`, from: '', interface: 'automation' });
      this.deps.log.debug(`automation:${id}: ${device.type}/${device.circuit} ${JSON.stringify(params)}`);
    } catch (error) {
      this.stats.failedWrites++;
      if (runner) runner.failedWrites++;
      this.deps.log.debug(`automation:${id}: ${device.type}/${device.circuit} ${JSON.stringify(params)} failed: ${(error as Error).message}`);
      throw error;
    } finally {
      this.recentWrites.set(device, { depth, at: this.clock.monotonic() });
    }
  }

  /** Chain depth of a change of `trigger`'s point: one more than the automation write that caused it, 0 for the outside world. */
  private depthOf(trigger: AutomationConfig['trigger']): number {
    if (!('input' in trigger)) return 0;
    const device = this.resolve(trigger.input);
    const recent = device && this.recentWrites.get(device);
    if (!recent) return 0;
    if (this.clock.monotonic() - recent.at > CHAIN_WINDOW_MS) {
      this.recentWrites.delete(device);
      return 0;
    }
    return recent.depth + 1;
  }

  private holds(condition: Condition): boolean {
    if (condition.kind === 'time') return inWindow(condition, this.clock.wall(), effectiveZone(this.location.timeZone));
    const device = this.resolve(condition.input);
    if (!device) return false;
    const quality = device.pointMeta(performance.now()).quality;
    if (condition.kind === 'quality') return condition.quality === 'bad' ? quality !== 'good' : quality === condition.quality;
    // A value that is not good never lets an action run.
    if (quality !== 'good') return false;
    const value = device.full()[condition.field];
    if (condition.is !== undefined) {
      if (condition.is === 0 || condition.is === 1) {
        if (binaryOf(value) !== condition.is) return false;
      } else if (value !== condition.is) return false;
    }
    if (condition.above !== undefined && !(typeof value === 'number' && value > condition.above)) return false;
    if (condition.below !== undefined && !(typeof value === 'number' && value < condition.below)) return false;
    return true;
  }

  private changed(devices: readonly Device[]): void {
    if (!this.active) return;
    for (const device of devices) {
      if (this.unbound > 0 && !this.watching.has(device) && this.clock.monotonic() - this.lastRebindAt >= 1000) {
        // Some trigger point is missing and an unwatched device changed (found, or given an alias): maybe it is that one.
        this.lastRebindAt = this.clock.monotonic();
        this.rebind();
      }
      const runners = this.watching.get(device);
      if (!runners) continue;
      for (const runner of runners) {
        const { trigger } = runner.config;
        if (!runner.detector || !runner.enabled || !('input' in trigger)) continue;
        runner.detector.observe(this.reading(device, trigger));
      }
    }
  }

  private reading(device: Device, trigger: { kind: string; field?: string }): Reading {
    const field = 'field' in trigger && trigger.field !== undefined ? trigger.field : 'value';
    return { value: device.full()[field], quality: device.pointMeta(performance.now()).quality, at: this.clock.monotonic() };
  }

  /** `type/circuit` (EVOK's alternate type names too) or an alias. */
  private resolve(ref: string): Device | undefined {
    return this.deps.registry.byName(ref);
  }

  private async reconcileOffload(): Promise<void> {
    const requests: OffloadRequest[] = [];
    for (const runner of this.runners.values()) {
      const { config } = runner;
      if (config.offload !== 'firmware' || config.trigger.kind !== 'edge') continue;
      const action = config.actions[0]!;
      if (action.kind !== 'follow' && action.kind !== 'toggle') continue;
      requests.push({ id: config.id, input: config.trigger.input, output: action.outputs[0]!, mode: action.kind === 'toggle' ? 'toggle' : action.inverted ? 'inverted' : 'follow' });
    }
    let results: Awaited<ReturnType<FirmwareOffload>> = [];
    try {
      results = await this.offload(requests);
    } catch (error) {
      this.deps.log.warn(`automations: firmware offload failed (${(error as Error).message}); iogate runs those rules itself`);
    }
    for (const runner of this.runners.values()) {
      const result = results.find((entry) => entry.id === runner.id);
      const offloaded = result?.offloaded === true;
      const wanted = runner.config.offload === 'firmware';
      if (wanted && !offloaded) this.deps.log.info(`automation:${runner.id}: not offloaded (${result?.reason ?? 'no answer from the firmware offload'}); iogate runs it`);
      runner.offloaded = offloaded;
      runner.offloadReason = wanted ? (offloaded ? undefined : (result?.reason ?? 'no answer')) : undefined;
      this.publish(runner);
    }
  }

  private note(id: string, refs: readonly string[] | undefined): void {
    if (refs === undefined || refs.length === 0) delete this.saved.sequences[id];
    else this.saved.sequences[id] = [...refs];
    this.saver.markDirty(() => structuredClone(this.saved));
  }

  private result(runner: Runner, text: string): void {
    runner.lastResult = text;
    this.publish(runner);
  }

  private publish(runner: Runner): void {
    if (runner.device.refresh()) {
      this.deps.registry.invalidate();
      this.deps.feed.publish([runner.device]);
    }
  }
}

/** What decides whether a reload keeps an automation: its configuration without where it was written; schedules also depend on the place. */
function keyOf(config: AutomationConfig, locationChanged: boolean): string {
  const { where: _where, ...rest } = config;
  return JSON.stringify(rest) + (locationChanged && config.trigger.kind === 'time' ? '*' : '');
}

function parseSaved(data: unknown): SavedAutomations {
  const saved: SavedAutomations = { sequences: {} };
  if (typeof data !== 'object' || data === null) return saved;
  const { sequences } = data as Record<string, unknown>;
  if (typeof sequences === 'object' && sequences !== null) {
    for (const [id, refs] of Object.entries(sequences)) {
      if (Array.isArray(refs)) saved.sequences[id] = refs.filter((ref): ref is string => typeof ref === 'string');
    }
  }
  return saved;
}

