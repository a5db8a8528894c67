import type { CoverConfig } from '../config/types.js';
import { Device, type DeviceState } from '../devices/device.js';
import { ModbusError } from '../modbus/errors.js';
import { ValidationError, decimal, oneOf, type FieldSpec } from '../devices/fields.js';
import type { SavedCover } from './control-state.js';
import { moved, secondsToEnd, secondsToPosition, type Direction, type Pose } from './cover-travel.js';
import { AsyncLock } from './lock.js';
import { label, reference, stateOf, type Output } from './output.js';

// A blind, shutter or gate on two outputs (`/rest/cover/<name>`). Its
// position is estimated from the motor's run time, from when the board
// switched the motor on to when it switched it off (each taken between the
// write going out and the board's answer). A run to an end goes on for the overrun past the
// estimated end and then counts as calibrated. Commands run one at a time;
// a command against the running direction stops, waits the dwell (the
// interlock of the two outputs) and reverses. Every run has its own end
// timer in the daemon, so a client that goes away never leaves a motor
// running; a board lost mid-run makes the position unknown, and no command is
// resumed when it returns.

interface CoverWrite {
  command: string;
  position: number;
  tilt: number;
}

type Goal = { kind: 'end'; direction: Direction } | { kind: 'position'; value: number } | { kind: 'tilt'; value: number };

interface Run {
  direction: Direction;
  output: Output;
  /** performance.now() when the output was confirmed on. */
  startedAt: number;
  /** The pose at the start; undefined when unknown. */
  from: Pose | undefined;
  goal: Goal;
  /** A second goal after this one (a position asked for before the cover knew its own). */
  then: Goal | undefined;
  timer: NodeJS.Timeout | undefined;
}

/** What a cover needs from the control layer. */
export interface CoverDriver {
  /**
   * Switch one of the cover's outputs through its interlock (on waits out
   * the dwell); rejects when the write failed. `switched` is told when the
   * board switched, while the interlock's lock is still held, so
   * the cover knows its motor's state before any other write to the outputs
   * is looked at.
   */
  drive(output: Output, on: boolean, switched: (at: number) => void): Promise<void>;
  /** Switch off, retried until it lands (board offline). */
  failSafeOff(output: Output, why: string): void;
  save(name: string, saved: SavedCover, now: boolean): Promise<void>;
  publish(device: Device): void;
  log: { info(message: string): void; warn(message: string): void };
}

/** How often a moving cover's estimate is pushed to listeners (the panel's slider, Home Assistant). */
const TICK_MS = 250;

export class Cover extends Device<CoverWrite> {
  readonly type = 'cover' as const;
  protected readonly writeSpec: FieldSpec<CoverWrite> = {
    command: oneOf(['open', 'close', 'stop']),
    position: decimal(0, 100),
    tilt: decimal(0, 100),
  };
  private pose: Pose | undefined;
  private calibrated = false;
  private run: Run | undefined;
  private readonly lock = new AsyncLock();
  private ticker: NodeJS.Timeout | undefined;
  /** True while the cover switches its own outputs, so their events are not taken for someone else's. */
  private switching = false;
  private readonly outsideWrites = new Set<Output>();

  constructor(
    private readonly config: CoverConfig,
    readonly up: Output,
    readonly down: Output,
    private readonly driver: CoverDriver,
  ) {
    super(config.name);
  }

  get hasTilt(): boolean {
    return this.config.tiltS !== undefined;
  }

  protected decode(): DeviceState {
    const pose = this.estimate();
    return {
      dev: 'cover',
      circuit: this.circuit,
      position: pose ? Math.round(pose.position) : null,
      tilt: pose && this.config.tiltS !== undefined ? Math.round(pose.tilt) : null,
      moving: this.moving(),
      calibrated: this.calibrated,
      up: reference(this.up),
      down: reference(this.down),
    };
  }

  private moving(): 'up' | 'down' | 'stopped' | 'unknown' {
    if (this.up.unavailable() !== undefined || this.down.unavailable() !== undefined) return 'unknown';
    return this.run?.direction ?? 'stopped';
  }

  /** The pose now: undefined while unknown (after a lost run, or during a calibration run from an unknown pose). */
  private estimate(now = performance.now()): Pose | undefined {
    const run = this.run;
    if (!run) return this.pose;
    const seconds = (now - run.startedAt) / 1000;
    if (run.from) return moved(this.config, run.from, run.direction, seconds);
    return seconds >= secondsToEnd(this.config, undefined, run.direction) ? endPose(run.direction) : undefined;
  }

  protected override checkWrite(params: Partial<CoverWrite>): void {
    const given = (['command', 'position', 'tilt'] as const).filter((field) => params[field] !== undefined);
    if (given.length > 1) throw new ValidationError(`a cover takes one of command, position and tilt at a time, got ${given.join(' and ')}`);
    if (params.tilt !== undefined && this.config.tiltS === undefined) throw new ValidationError(`tilt: cover ${this.circuit} has no tilt (no tilt_s configured)`);
  }

  protected apply(params: Partial<CoverWrite>): Promise<void> {
    return this.lock.run(() => this.command(params));
  }

  override settle(): boolean {
    this.driver.publish(this);
    return false;
  }

  private async command(params: Partial<CoverWrite>): Promise<void> {
    // Refused now, as any write to an offline board: never kept to run when the board is back.
    const offline = this.up.unavailable() ?? this.down.unavailable();
    if (offline !== undefined) throw new ModbusError('offline', `cover ${this.circuit}: ${offline}`);
    if (params.command === 'stop') return this.halt();
    if (params.command === 'open' || params.command === 'close') {
      return this.begin({ kind: 'end', direction: params.command === 'open' ? 'up' : 'down' }, undefined);
    }
    const goal: Goal | undefined =
      params.position !== undefined ? { kind: 'position', value: params.position } : params.tilt !== undefined ? { kind: 'tilt', value: params.tilt } : undefined;
    if (goal === undefined) return;
    if (goal.kind === 'position' && (goal.value === 100 || goal.value === 0)) {
      return this.begin({ kind: 'end', direction: goal.value === 100 ? 'up' : 'down' }, undefined);
    }
    // Without a known position, first a run to the nearer end calibrates it.
    if (this.estimate() === undefined) {
      const direction: Direction = goal.kind === 'position' && goal.value < 50 ? 'down' : 'up';
      return this.begin({ kind: 'end', direction }, goal);
    }
    return this.begin(goal, undefined);
  }

  private async begin(goal: Goal, then: Goal | undefined): Promise<void> {
    const now = this.estimate();
    const direction = directionOf(goal, now);
    if (direction === undefined) {
      await this.halt();
      return;
    }
    const run = this.run;
    if (run && run.direction === direction) {
      // Same way: only the end of the run moves.
      run.goal = goal;
      run.then = then;
      this.arm(run, this.secondsLeft(run));
      return;
    }
    if (run) await this.halt();
    const from = this.estimate();
    const seconds = this.secondsFor(goal, from, direction);
    if (seconds <= 0) return;
    await this.startRun(direction, goal, then, from, seconds);
  }

  private secondsFor(goal: Goal, from: Pose | undefined, direction: Direction): number {
    switch (goal.kind) {
      case 'end':
        return secondsToEnd(this.config, from, direction) + this.config.overrunS;
      case 'position':
        return from ? secondsToPosition(this.config, from, direction, goal.value) : 0;
      case 'tilt':
        return from ? (Math.abs(goal.value - from.tilt) / 100) * (this.config.tiltS ?? 0) : 0;
    }
  }

  /** Seconds the running run still has to go for its (possibly new) goal. */
  private secondsLeft(run: Run): number {
    const elapsed = (performance.now() - run.startedAt) / 1000;
    if (run.goal.kind === 'end') return secondsToEnd(this.config, run.from, run.direction) + this.config.overrunS - elapsed;
    return this.secondsFor(run.goal, this.estimate(), run.direction);
  }

  private async startRun(direction: Direction, goal: Goal, then: Goal | undefined, from: Pose | undefined, seconds: number): Promise<void> {
    const output = direction === 'up' ? this.up : this.down;
    // Noted before the motor starts, so a restart after a crash knows the position is lost.
    await this.driver.save(this.circuit, this.saved(true), true);
    this.switching = true;
    let run: Run | undefined;
    try {
      await this.driver.drive(output, true, (startedAt) => {
        run = { direction, output, startedAt, from, goal, then, timer: undefined };
        this.run = run;
        this.switching = false;
      });
    } catch (error) {
      await this.driver.save(this.circuit, this.saved(false), false);
      throw error;
    } finally {
      this.switching = false;
    }
    // Already over if a client's write of 0 stopped it at once.
    if (!run || this.run !== run) return;
    // The run's length counts from when the motor started, not from when the write was confirmed.
    this.arm(run, seconds - (performance.now() - run.startedAt) / 1000);
    this.ticker ??= setInterval(() => this.tick(), TICK_MS);
    this.driver.publish(this);
  }

  private arm(run: Run, seconds: number): void {
    clearTimeout(run.timer);
    run.timer = setTimeout(() => {
      run.timer = undefined;
      this.lock.run(() => this.finish(run)).catch((error: Error) => this.driver.log.warn(`cover ${this.circuit}: ${error.message}`));
    }, Math.max(0, seconds * 1000));
  }

  /** The end timer of `run` fired: stop, then go on to the next goal if there is one. */
  private async finish(run: Run): Promise<void> {
    if (this.run !== run) return;
    await this.halt();
    if (run.then && this.estimate() !== undefined) await this.begin(run.then, undefined);
  }

  /** Stop the motor, if running, and keep the pose it reached. */
  private async halt(): Promise<void> {
    const run = this.run;
    if (!run) return;
    clearTimeout(run.timer);
    this.switching = true;
    try {
      await this.driver.drive(run.output, false, (stoppedAt) => {
        this.switching = false;
        this.endRun(run, stoppedAt);
      });
    } catch (error) {
      this.lose(`stopping it failed (${(error as Error).message})`);
      throw error;
    } finally {
      this.switching = false;
    }
  }

  private endRun(run: Run, at: number): void {
    clearTimeout(run.timer);
    // Already ended where the motor stopped (a client wrote 0 while the cover was stopping it).
    if (this.run !== run) return;
    const seconds = (at - run.startedAt) / 1000;
    if (run.goal.kind === 'end' && seconds >= secondsToEnd(this.config, run.from, run.direction)) {
      this.pose = endPose(run.direction);
      this.calibrated = true;
    } else {
      this.pose = run.from ? moved(this.config, run.from, run.direction, seconds) : undefined;
    }
    this.run = undefined;
    this.stopTicker();
    void this.driver.save(this.circuit, this.saved(false), false);
    this.driver.publish(this);
  }

  /** The run is lost (board gone, stop failed): position unknown, both outputs off as soon as the board takes it, nothing resumed. */
  private lose(why: string): void {
    const run = this.run;
    if (run) clearTimeout(run.timer);
    this.run = undefined;
    this.pose = undefined;
    this.calibrated = false;
    this.stopTicker();
    const reason = `cover ${this.circuit}: ${why} mid-movement; position unknown until a full run, the command is dropped`;
    this.driver.log.warn(reason);
    this.driver.failSafeOff(this.up, reason);
    this.driver.failSafeOff(this.down, reason);
    void this.driver.save(this.circuit, this.saved(false), false);
    this.driver.publish(this);
  }

  private tick(): void {
    this.boardChanged();
  }

  /** Called every tick while moving, and whenever a board goes on- or offline. */
  boardChanged(): void {
    if (this.run && (this.up.unavailable() !== undefined || this.down.unavailable() !== undefined)) {
      this.lose('its board went offline');
      return;
    }
    this.driver.publish(this);
  }

  private stopTicker(): void {
    clearInterval(this.ticker);
    this.ticker = undefined;
  }

  /**
   * A client's write to one of the outputs is on its way: until it is
   * confirmed (stoppedOutside) a read showing the output off is that write,
   * and the run ends at the moment it went on the wire, not when a read saw it.
   */
  outsideWrite(output: Output, pending: boolean): void {
    if (pending) this.outsideWrites.add(output);
    else this.outsideWrites.delete(output);
  }

  /** A client wrote 0 to the running output (allowed: stopping is always safe); the run ends where the motor stopped. */
  stoppedOutside(output: Output, at: number): void {
    const run = this.run;
    if (!run || run.output !== output) return;
    this.driver.log.info(`cover ${this.circuit}: stopped by a write of 0 to ${label(output)}`);
    this.endRun(run, at);
  }

  /** An output of this cover changed, as reads and writes report it. */
  observe(output: Output, active: boolean): void {
    if (this.switching || this.outsideWrites.has(output)) return;
    const state = stateOf(output);
    const run = this.run;
    if (run && output === run.output && state === 'off') {
      this.driver.log.info(`cover ${this.circuit}: ${label(output)} went off without the cover (written 0, or the board reset); stopped at the estimate`);
      this.endRun(run, performance.now());
    } else if (run && state === 'unknown') {
      this.lose('its board went offline');
    } else if (active && state === 'on' && run?.output !== output) {
      this.driver.failSafeOff(output, `cover ${this.circuit}: ${label(output)} found on while the cover was not running it; switched off (nothing moves by itself)`);
    }
    this.driver.publish(this);
  }

  /** After a restart: a cover that was moving has no position; one at rest keeps its last one, not calibrated. */
  restore(saved: SavedCover | undefined): void {
    if (saved?.moving) {
      this.driver.log.warn(`cover ${this.circuit} was moving when iogate stopped (killed or crashed): its outputs are switched off and its position is unknown until a full run`);
      this.driver.failSafeOff(this.up, `cover ${this.circuit}: fail-safe off after a restart mid-movement`);
      this.driver.failSafeOff(this.down, `cover ${this.circuit}: fail-safe off after a restart mid-movement`);
    } else if (saved && saved.position !== null) {
      this.pose = { position: saved.position, tilt: saved.tilt ?? 0 };
    }
    this.calibrated = false;
    void this.driver.save(this.circuit, this.saved(false), false);
    this.refresh();
  }

  /** On shutdown: a running motor is stopped. */
  async shutdown(): Promise<void> {
    await this.lock.run(async () => {
      if (!this.run) return;
      this.driver.log.info(`cover ${this.circuit}: stopped because iogate is stopping`);
      await this.halt();
    });
  }

  private saved(moving: boolean): SavedCover {
    const pose = this.estimate();
    return { position: pose?.position ?? null, tilt: pose && this.config.tiltS !== undefined ? pose.tilt : null, moving };
  }
}

function endPose(direction: Direction): Pose {
  return direction === 'up' ? { position: 100, tilt: 100 } : { position: 0, tilt: 0 };
}

function directionOf(goal: Goal, pose: Pose | undefined): Direction | undefined {
  if (goal.kind === 'end') return goal.direction;
  if (!pose) return undefined;
  const current = goal.kind === 'position' ? pose.position : pose.tilt;
  return goal.value > current ? 'up' : goal.value < current ? 'down' : undefined;
}
