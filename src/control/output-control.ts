import type { CoverConfig, InterlockConfig } from '../config/types.js';
import type { Device } from '../devices/device.js';
import { DigitalOutput } from '../devices/digital/do.js';
import { ValidationError, binary, decimal, integer } from '../devices/fields.js';
import { RequestError } from '../registry/request-error.js';
import type { Logger } from '../logging/log.js';
import { outputMovesOf, type OutputMove, type OutputMoves } from '../devices/output-moves.js';
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
  /** Order in which output locks are taken when one write holds several (a raw register moving outputs). */
  private readonly lockOrder = new Map<Output, number>();
  readonly covers: Cover[] = [];
  private readonly state: ControlState;
  private readonly pulses: PulseTimers;
  private readonly offs: FailSafeOffs;
  /** False until start(): before it, reads only record states (the first scan is still coming in). */
  private active = false;
  /** Offs a reload could not land before it stopped their bus, by output reference, for the device built in its place. */
  private readonly handedOver = new Map<string, string>();
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
      // A raw register or a DirectSwitch input: the outputs it would move are decided here like any output write.
      const moves = outputMovesOf(device, params);
      return moves ? this.admitMoves(device, params, moves) : PASS_THROUGH(params);
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
    if (cover && (turnsOn || pulseMs !== undefined)) throw this.coverRefusal(device, cover);
    if (groups && rest['timeout'] !== undefined && !turnsOn) {
      // EVOK's timeout would switch it on later, past the interlock check.
      throw new RequestError(409, 'InterlockError', `${label(device)} is interlocked: value=0 with a timeout would switch it on later unchecked; write value=1 when it should go on`);
    }
    if (!switches) return PASS_THROUGH(rest);
    return { params: rest, run: (action) => this.underLocks([device], () => this.carryOut(device, action, turnsOn, pulseMs)) };
  }

  private coverRefusal(output: Output, cover: Cover): RequestError {
    return new RequestError(409, 'InterlockError', `${label(output)} drives cover ${cover.circuit}: command the cover (POST /rest/cover/${cover.circuit} command=open|close|stop), or write 0 to stop it`);
  }

  /** Outputs the layer must take a write of over: in a group (a cover's included), or with a pulse or a fail-safe off pending. */
  private takesOver(output: Output): boolean {
    return this.groupsOf.has(output) || this.pulses.has(output) || this.offs.has(output);
  }

  /**
   * A raw write that moves outputs it does not name (a register mirroring
   * relays, a DO's duty register, a DirectSwitch setting). Handing a guarded
   * output to a DirectSwitch input is refused. A write that moves guarded
   * outputs is decided as a whole before anything is written: refused (409)
   * if one move breaks a rule, else carried out as output writes, offs first,
   * each with the checks, dwell and bookkeeping of a client's output write.
   * Writes that move no guarded output stay raw, as in EVOK. `device` is
   * the one written (named in messages); a front end taking raw Modbus
   * writes passes registerWriteMoves' or coilWriteMoves' result and its raw
   * write to `run`.
   */
  admitMoves(device: Device, params: Readonly<Record<string, unknown>>, { moves, handovers }: OutputMoves): AdmittedWrite {
    for (const { input, output } of handovers) {
      const rule = this.ruleOf(output);
      if (rule === undefined) continue;
      const via = device === input ? '' : `${label(device)}: `;
      throw new RequestError(409, 'InterlockError', `${via}${label(input)} stays out of DirectSwitch mode: the board would switch ${label(output)} by itself, past iogate's rules (${rule}); switch ${label(output)} through iogate`);
    }
    const steps = moves.filter((move): move is OutputMove & { output: Output } => isOutput(move.output));
    if (!steps.some(({ output }) => this.takesOver(output))) return PASS_THROUGH(params);

    const writes: Array<OutputMove & { output: Output }> = [];
    for (const step of steps) {
      const groups = this.groupsOf.get(step.output);
      // A guarded output the write leaves on is not switched again (a moving cover's motor keeps running).
      const leftOn = step.kind === 'value' && step.on && groups !== undefined && stateOf(step.output) === 'on' && !groups.some((group) => group.isInDoubt(step.output));
      const cover = this.coverOf.get(step.output);
      if (cover && step.on && !leftOn) throw this.coverRefusal(step.output, cover);
      if (!leftOn) writes.push(step);
    }
    for (const group of this.groups) {
      const on = steps.filter((step) => step.on && group.outputs.includes(step.output));
      if (on.length > 1) {
        throw new RequestError(409, 'InterlockError', `${label(device)}: ${on.map((step) => label(step.output)).join(' and ')} stay off: the write would have them on together, and they are interlocked (${group.name})`);
      }
    }
    return {
      params,
      // The raw write is not sent: its moves are, one by one.
      run: () =>
        this.underLocks(
          writes.map(({ output }) => output),
          async () => {
            const leaving = new Set(writes.filter((step) => !step.on).map(({ output }) => output));
            const ons = writes.filter((step) => step.on);
            for (const { output } of ons) for (const group of this.groupsOf.get(output) ?? []) await group.check(output, leaving);
            for (const step of writes) if (!step.on) await this.carryOut(step.output, step.write, false, undefined);
            for (const step of ons) await this.carryOut(step.output, step.write, true, undefined);
          },
        ),
    };
  }

  /** The rule that guards `output` (`it drives cover x`, `interlocks[0]`), for messages; undefined for an output in no group. */
  private ruleOf(output: Device): string | undefined {
    if (!isOutput(output)) return undefined;
    const cover = this.coverOf.get(output);
    return cover ? `it drives cover ${cover.circuit}` : this.groupsOf.get(output)?.map((group) => group.name).join(', ');
  }

  /** One output's write under its locks: the interlock check, the write, and what follows from it. */
  private async carryOut(device: Output, action: () => Promise<void>, turnsOn: boolean, pulseMs: number | undefined): Promise<void> {
    const groups = this.groupsOf.get(device);
    const cover = this.coverOf.get(device);
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
  }

  /**
   * Runs `operation` holding the locks of every group of `outputs` (always
   * taken in the same order), then the outputs' own, so a pulse's end and a
   * client's write to an output in no group are ordered too. Every caller
   * takes group locks before output locks, each kind in one fixed order, so
   * two writes holding several locks cannot wait for each other.
   */
  private underLocks<T>(outputs: readonly Output[], operation: () => Promise<T>): Promise<T> {
    const groups = new Set(outputs.flatMap((output) => this.groupsOf.get(output) ?? []));
    const sorted = [...groups].sort((a, b) => this.groups.indexOf(a) - this.groups.indexOf(b));
    const owns = [...new Set(outputs)].map((output) => {
      let own = this.outputLocks.get(output);
      if (!own) {
        this.outputLocks.set(output, (own = new AsyncLock()));
        this.lockOrder.set(output, this.lockOrder.size);
      }
      return { own, order: this.lockOrder.get(output)! };
    });
    owns.sort((a, b) => a.order - b.order);
    const locks = [...sorted.map((group) => group.lock), ...owns.map(({ own }) => own)];
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
    return this.underLocks([output], async () => {
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
    this.warnDirectSwitch();
    this.active = true;
  }

  /**
   * An input found in DirectSwitch mode (set before iogate ran, or by another
   * master, and kept in the board's NV memory) switches its output on the
   * board itself. iogate leaves the setting alone (nothing changes by itself)
   * but says so when that output is guarded.
   */
  private warnDirectSwitch(): void {
    for (const input of this.registry.list('di')) {
      if (input.full()['mode'] !== 'DirectSwitch') continue;
      for (const { output } of outputMovesOf(input, { mode: 'DirectSwitch' })?.handovers ?? []) {
        const rule = this.ruleOf(output);
        if (rule === undefined) continue;
        this.log.warn(`${label(input)} is in DirectSwitch mode: the board switches ${label(output)} by itself, past iogate's rules (${rule}); set ${label(input)} mode=Simple`);
      }
    }
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

  /**
   * A reload is about to stop the bus of these devices and build new ones in
   * their place. Their pulses, EVOK timeouts that were to switch them off and
   * pending fail-safe offs end now, while the old line still runs: kept on
   * the old objects, their timers wrote to the stopped bus for ever and the
   * output stayed on. A timeout that was to switch an output on is dropped
   * (nothing switches on by itself). An off that does not land is handed to
   * the output rebuilt under the same name (adopt).
   */
  async release(devices: readonly Device[]): Promise<void> {
    await Promise.all(devices.filter(isOutput).map((output) => this.releaseOne(output)));
  }

  private async releaseOne(output: Output): Promise<void> {
    const ref = reference(output);
    const pulsed = this.pulses.drop(output);
    const timedOff = output instanceof DigitalOutput && output.dropTimedRevert() === 0;
    const retrying = this.offs.has(output);
    this.offs.cancel(output);
    if (pulsed || timedOff || retrying) {
      const why = `${label(output)}: ${pulsed ? 'its pulse' : timedOff ? 'its timeout' : 'its pending off'} ended early, its bus is rebuilt by a reload (fail safe)`;
      this.log.info(why);
      try {
        await this.switchUnderLocks(output, false);
        this.state.setPulse(ref, undefined);
      } catch {
        this.handedOver.set(ref, why);
      }
    }
    this.outputLocks.delete(output);
  }

  /** Devices a reload built: offs that release() could not land go on with them, until they land. */
  adopt(devices: readonly Device[]): void {
    for (const output of devices.filter(isOutput)) {
      const ref = reference(output);
      const why = this.handedOver.get(ref);
      if (why === undefined) continue;
      this.handedOver.delete(ref);
      // A pulse's note stays in the state file until the off has landed, so a crash meanwhile still finds it.
      this.offs.request(output, why, () => this.state.setPulse(ref, undefined));
    }
  }

  private findOutput(ref: string): Output | undefined {
    const found = resolveOutput(this.registry, ref);
    return typeof found === 'string' ? undefined : found;
  }
}
