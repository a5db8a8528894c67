import type { CoverConfig, InterlockConfig } from '../config/types.js';
import type { Device } from '../devices/device.js';
import { ValidationError, binary, decimal, integer } from '../devices/fields.js';
import { RequestError } from '../errors.js';
import type { Logger } from '../log.js';
import { currentRequestContext, withRequestContext } from '../modbus/request-context.js';
import type { ChangeFeed } from '../registry/feed.js';
import type { Registry } from '../registry/registry.js';
import type { AdmittedWrite, WriteControl } from '../registry/write.js';
import { ControlState } from './control-state.js';
import { Cover } from './cover.js';
import { FailSafeOffs } from './fail-safe-offs.js';
import { InterlockDevice } from './interlock-device.js';
import { InterlockGroup } from './interlock-group.js';
import { AsyncLock } from './lock.js';
import { isOutput, label, reference, resolveOutput, stateOf, type Output } from './output.js';
import { PulseTimers } from './pulses.js';

// The control layer on the one write path: interlock groups, timed pulses and
// covers. Every API's write reaches it through writeDevice (admit), and the
// layer's own switching (a pulse ending, a cover stopping) takes the same
// locks and checks, so no interface and no timer can get around a rule.

/** `pulse_ms` at most a day: a longer "pulse" is a schedule, not a pulse. */
export const MAX_PULSE_MS = 86_400_000;

export class ControlSetupError extends Error {}

/**
 * When a board switched, as best known: between sending the write and its
 * answer, so the middle (on a serial line the request and the reply take
 * about as long; in-process, either side may wait for the event loop).
 */
function switchedAt(sentAt: number, answeredAt: number): number {
  return (sentAt + answeredAt) / 2;
}

const PASS_THROUGH = (params: Readonly<Record<string, unknown>>): AdmittedWrite => ({ params, run: (action) => action() });

export class OutputControl implements WriteControl {
  private readonly groups: InterlockGroup[] = [];
  private readonly groupsOf = new Map<Output, InterlockGroup[]>();
  private readonly coverOf = new Map<Output, Cover>();
  private readonly outputLocks = new Map<Output, AsyncLock>();
  readonly covers: Cover[] = [];
  private readonly state: ControlState;
  private readonly pulses: PulseTimers;
  private readonly offs: FailSafeOffs;
  /** False until start(): before it, reads only record states (the first scan is still coming in). */
  private active = false;
  /** Groups already reported with two members on, so an incident is logged once. */
  private readonly violated = new Set<InterlockGroup>();

  constructor(
    private readonly registry: Registry,
    private readonly feed: ChangeFeed,
    private readonly log: Logger,
    stateDir: string,
    interlocks: readonly InterlockConfig[],
    covers: readonly CoverConfig[],
  ) {
    const problems: string[] = [];
    const resolve = (name: string, where: string): Output | undefined => {
      const found = resolveOutput(registry, name);
      if (typeof found === 'string') problems.push(`${where}: ${found}`);
      return typeof found === 'string' ? undefined : found;
    };
    interlocks.forEach((config, index) => {
      const outputs = config.outputs.map((name) => resolve(name, config.where)).filter((output): output is Output => output !== undefined);
      if (outputs.length === config.outputs.length) this.addGroup(new InterlockGroup(`interlocks[${index}]`, outputs, config.dwellMs, config.switchOver), String(index + 1));
    });
    for (const config of covers) {
      const up = resolve(config.up, `covers.${config.name}.up`);
      const down = resolve(config.down, `covers.${config.name}.down`);
      if (!up || !down) continue;
      for (const output of [up, down]) {
        const owner = this.coverOf.get(output);
        if (owner) problems.push(`covers.${config.name}: ${label(output)} already drives cover ${owner.circuit}`);
      }
      const cover = new Cover(config, up, down, this.driver());
      this.coverOf.set(up, cover);
      this.coverOf.set(down, cover);
      this.covers.push(cover);
      // The two outputs of a cover are always interlocked, with the cover's dwell before reversing.
      this.addGroup(new InterlockGroup(`cover ${config.name}`, [up, down], config.dwellMs, false), undefined);
      registry.add(cover);
    }
    if (problems.length > 0) throw new ControlSetupError(problems.join('\n'));
    this.state = new ControlState(stateDir, (message) => log.error(message));
    this.offs = new FailSafeOffs((output, stillWanted) => this.switchUnderLocks(output, false, stillWanted), log);
    this.pulses = new PulseTimers(this.state, (output, why, done) => this.offs.request(output, why, done));
    feed.subscribe((devices) => this.observe(devices), { includeSilent: true });
  }

  private addGroup(group: InterlockGroup, circuit: string | undefined): void {
    this.groups.push(group);
    for (const output of group.outputs) {
      const list = this.groupsOf.get(output) ?? [];
      list.push(group);
      this.groupsOf.set(output, list);
      group.observe(output);
    }
    if (circuit !== undefined) this.registry.add(new InterlockDevice(circuit, group));
  }

  admit(device: Device, params: Readonly<Record<string, unknown>>): AdmittedWrite {
    const hasPulse = Object.hasOwn(params, 'pulse_ms');
    if (!isOutput(device)) {
      if (hasPulse) throw new ValidationError(`'pulse_ms' cannot be written here: pulses are for do, ro and led outputs`);
      return PASS_THROUGH(params);
    }
    const groups = this.groupsOf.get(device);
    const cover = this.coverOf.get(device);
    if (!hasPulse && !groups && !this.pulses.has(device) && !this.offs.has(device)) return PASS_THROUGH(params);

    let rest = params;
    let pulseMs: number | undefined;
    if (hasPulse) {
      pulseMs = integer(1, MAX_PULSE_MS)(params['pulse_ms'], 'pulse_ms');
      const { pulse_ms: _, ...others } = params;
      rest = others;
      if (rest['value'] === undefined || binary(rest['value'], 'value') !== 1) throw new ValidationError('pulse_ms: a pulse needs value=1 (the output goes on, and off after pulse_ms)');
      for (const field of ['timeout', 'pwm_duty']) if (rest[field] !== undefined) throw new ValidationError(`pulse_ms: cannot be combined with ${field}`);
    }
    const switches = rest['value'] !== undefined || rest['pwm_duty'] !== undefined;
    const turnsOn = (rest['value'] !== undefined && binary(rest['value'], 'value') === 1) || (rest['pwm_duty'] !== undefined && decimal(0, 100)(rest['pwm_duty'], 'pwm_duty') > 0);
    if (cover && (turnsOn || pulseMs !== undefined)) {
      throw new RequestError(409, 'InterlockError', `${label(device)} drives cover ${cover.circuit}: command the cover (POST /rest/cover/${cover.circuit} command=open|close|stop), or write 0 to stop it`);
    }
    if (groups && rest['timeout'] !== undefined && !turnsOn) {
      // EVOK's timeout would switch it on later, past the interlock check.
      throw new RequestError(409, 'InterlockError', `${label(device)} is interlocked: value=0 with a timeout would switch it on later unchecked; write value=1 when it should go on`);
    }
    if (!switches) return PASS_THROUGH(rest);
    return {
      params: rest,
      run: (action) =>
        this.underLocks(device, async () => {
          if (turnsOn) await this.clearGroupsFor(device);
          if (pulseMs !== undefined) await this.pulses.noteBefore(device, pulseMs);
          let switchedAtTime: number | undefined;
          cover?.outsideWrite(device, true);
          try {
            // The client's context (its signal, its deadline), plus the moment the board answered the write.
            await withRequestContext({ ...currentRequestContext(), onAnswered: (sent, answered) => (switchedAtTime = switchedAt(sent, answered)) }, action);
          } catch (error) {
            for (const group of groups ?? []) group.writeFailed(device);
            if (pulseMs !== undefined) this.pulses.forget(device);
            throw error;
          } finally {
            // Decoded and published while the locks are held: the next write's interlock check reads this state.
            if (device.settle()) this.feed.publish([device]);
            cover?.outsideWrite(device, false);
          }
          for (const group of groups ?? []) group.writeConfirmed(device);
          // A client switching a cover's output off stops the cover, timed from when the board switched.
          if (cover && stateOf(device) === 'off') cover.stoppedOutside(device, switchedAtTime ?? performance.now());
          // A later write to the output cancels the pending off of a pulse or a fail-safe retry.
          this.offs.cancel(device);
          if (pulseMs !== undefined) this.pulses.arm(device, pulseMs);
          else this.pulses.cancel(device);
        }),
    };
  }

  /**
   * Runs `operation` holding the locks of every group of `output` (always
   * taken in the same order), then the output's own, so a pulse's end and a
   * client's write to an output in no group are ordered too.
   */
  private underLocks<T>(output: Output, operation: () => Promise<T>): Promise<T> {
    const groups = this.groupsOf.get(output) ?? [];
    const sorted = [...groups].sort((a, b) => this.groups.indexOf(a) - this.groups.indexOf(b));
    let own = this.outputLocks.get(output);
    if (!own) this.outputLocks.set(output, (own = new AsyncLock()));
    const locks = [...sorted.map((group) => group.lock), own];
    return locks.reduceRight<() => Promise<T>>((inner, lock) => () => lock.run(inner), operation)();
  }

  private async clearGroupsFor(output: Output): Promise<void> {
    for (const group of this.groupsOf.get(output) ?? []) await group.clearFor(output, (other) => this.switchRaw(other, false));
  }

  /**
   * The layer's own switching (pulse end, cover, fail-safe off): the same
   * locks and checks as a client's write. `switched` is told, under the
   * locks, when the board switched (switchedAt).
   */
  private switchUnderLocks(output: Output, on: boolean, stillWanted: () => boolean = () => true, switched?: (at: number) => void): Promise<void> {
    return this.underLocks(output, async () => {
      if (!stillWanted()) return;
      if (on) await this.clearGroupsFor(output);
      try {
        await this.switchRaw(output, on, switched);
      } catch (error) {
        for (const group of this.groupsOf.get(output) ?? []) group.writeFailed(output);
        throw error;
      }
      for (const group of this.groupsOf.get(output) ?? []) group.writeConfirmed(output);
    });
  }

  /**
   * In a context of its own: the layer's writes belong to no client, so a
   * client that went away (its signal aborted) never drops a pulse's end or a
   * cover's stop.
   */
  private async switchRaw(output: Output, on: boolean, switched?: (at: number) => void): Promise<void> {
    let switchedAtTime: number | undefined;
    try {
      await withRequestContext({ onAnswered: (sent, answered) => (switchedAtTime = switchedAt(sent, answered)) }, () => output.prepareWrite({ value: on ? 1 : 0 })());
      // Before the new state is published, so its listeners already see what the switching meant.
      switched?.(switchedAtTime ?? performance.now());
    } finally {
      if (output.settle()) this.feed.publish([output]);
    }
  }

  private driver() {
    return {
      drive: (output: Output, on: boolean, switched: (at: number) => void) => {
        if (!on) this.offs.cancel(output);
        return this.switchUnderLocks(output, on, undefined, switched);
      },
      failSafeOff: (output: Output, why: string) => this.offs.request(output, why),
      save: async (name: string, saved: { position: number | null; tilt: number | null; moving: boolean }, now: boolean) => {
        this.state.setCover(name, saved);
        if (now) await this.state.saveNow();
      },
      publish: (device: Device) => this.publish(device),
      log: this.log,
    };
  }

  private publish(device: Device): void {
    if (device.refresh()) {
      this.registry.invalidate();
      this.feed.publish([device]);
    }
  }

  /** Reads and writes report outputs here: dwell clocks, interlock violations, covers' outputs. */
  private observe(devices: readonly Device[]): void {
    for (const device of devices) {
      // A board went on- or offline: a cover at rest shows `moving: unknown` while its board is away.
      if (device.type === 'modbus_slave') for (const cover of this.covers) cover.boardChanged();
      if (!isOutput(device)) continue;
      const groups = this.groupsOf.get(device);
      if (groups) for (const group of groups) group.observe(device);
      this.coverOf.get(device)?.observe(device, this.active);
      if (this.active && groups) for (const group of groups) this.checkViolation(group, 'now');
    }
  }

  /** Two members on (found at start-up, on a board that came back, or switched behind our back): all off, logged once. */
  private checkViolation(group: InterlockGroup, when: string): void {
    const on = group.onMembers();
    if (on.length < 2) {
      this.violated.delete(group);
      return;
    }
    const why = `${group.name}: ${on.map(label).join(' and ')} found on together ${when}; all switched off`;
    if (!this.violated.has(group)) this.log.warn(why);
    this.violated.add(group);
    for (const output of on) this.offs.request(output, why);
  }

  /** Switches an output off for safety (an automation's timed sequence cut short), retried until it lands; a later write cancels it. */
  failSafeOff(output: Output, why: string, done?: () => void): void {
    this.offs.request(output, why, done);
  }

  /** After the first scan: fail-safe offs for what a crash left running, then the rules in force. */
  start(): void {
    for (const [ref, until] of Object.entries(this.state.found.pulses)) {
      const output = this.findOutput(ref);
      const ended = until <= Date.now() ? 'already over' : `${Math.round((until - Date.now()) / 1000)} s still to run`;
      const why = `pulse on ${ref} was running when iogate stopped (${ended}): switched off (fail safe)`;
      this.log.warn(why);
      if (!output) continue;
      // Kept in the file until the off has landed, so another crash meanwhile still finds it.
      this.state.setPulse(ref, until);
      this.offs.request(output, why, () => this.state.setPulse(ref, undefined));
    }
    for (const cover of this.covers) {
      cover.restore(this.state.found.covers[cover.circuit]);
      for (const output of [cover.up, cover.down]) {
        if (stateOf(output) === 'on') {
          const why = `cover ${cover.circuit}: ${label(output)} found on at start-up with no command from this run; switched off (nothing moves by itself)`;
          this.log.warn(why);
          this.offs.request(output, why);
        }
      }
    }
    for (const group of this.groups) this.checkViolation(group, 'at start-up');
    this.active = true;
  }

  /** On shutdown: running pulses end and moving covers stop now (fail safe), and the state is saved. */
  async stop(): Promise<void> {
    this.active = false;
    await Promise.allSettled([
      ...this.covers.map((cover) => cover.shutdown()),
      ...this.pulses.running().map((output) => {
        this.log.info(`pulse on ${reference(output)} ended early because iogate is stopping (fail safe)`);
        this.pulses.cancel(output);
        return this.switchUnderLocks(output, false);
      }),
    ]);
    this.offs.stop();
    await this.state.flush();
  }

  private findOutput(ref: string): Output | undefined {
    const found = resolveOutput(this.registry, ref);
    return typeof found === 'string' ? undefined : found;
  }
}
