import { UNKNOWN_ACTOR, type Actor } from '../../registry/audit-trail.js';
import { WebSocket, type RawData } from 'ws';
import type { Device, DeviceType } from '../../devices/device.js';
import type { Scope } from '../access/auth.js';
import { CLOSE_POLICY, CommandQueue, InvalidMessageLimiter, WS_BUDGET, commandTurns, pause, yieldTurn } from './budget.js';

// One WebSocket connection: its push filter and its outbox. The outbox is a
// set of devices, not a queue of messages: a device that changes again before
// the client caught up is sent once, with its state at sending time. So a slow
// reader gets the latest state of everything that changed, the memory held
// for it is bounded by the number of devices, and nobody waits for it.
//
// Commands run one at a time in arrival order, so a `full` sent after a `set`
// sees the write. While one runs, a few more frames are read and wait; beyond
// that the socket is not read, which makes a client that floods commands wait
// in TCP instead of in our memory. Reading on while a command waits for the
// bus is what lets us see the client close, so its write is dropped unsent.
// What the client may cost beyond that is budgeted in budget.ts.

/** Below this many unsent bytes the client counts as keeping up. */
const KEEPING_UP_BYTES = 16 * 1024;
/** Frames read ahead while a command runs (each at most the 64 KiB frame limit). */
const MAX_WAITING_COMMANDS = 4;

/**
 * A change batch as sent to clients without a filter, serialised once for all
 * of them. It is kept as UTF-8 bytes but always sent as a text frame (see send).
 */
export class OutgoingBatch {
  private text: Buffer | undefined;
  private metaText: Buffer | undefined;

  constructor(readonly devices: readonly Device[]) {}

  message(): Buffer {
    return (this.text ??= Buffer.from(`[${this.devices.map((device) => device.json()).join(',')}]`));
  }

  /** The same batch in the meta view, for clients that asked for it (`/ws?meta=1`). */
  metaMessage(): Buffer {
    const now = performance.now();
    return (this.metaText ??= Buffer.from(`[${this.devices.map((device) => device.metaJson(now)).join(',')}]`));
  }
}

const TEXT_FRAME = { binary: false } as const;

export type CommandRunner = (client: WsClient, data: RawData, isBinary: boolean) => Promise<void>;

export class WsClient {
  /** Types pushed to this client; undefined is EVOK's "default" filter: everything. */
  private filter: ReadonlySet<DeviceType> | undefined;
  private readonly pending = new Set<Device>();
  /** Frames that arrived while a command ran; `ws` delivers what it had already received after a pause. */
  private readonly commands = new CommandQueue();
  private readonly invalid = new InvalidMessageLimiter();
  private runningCommand = false;
  /** Set once the client was told to go (budget exceeded); nothing more is run for it. */
  private closing = false;
  /** Cleared by each heartbeat, set again by the peer's pong. */
  alive = true;
  private closedController: AbortController | undefined;

  constructor(
    readonly socket: WebSocket,
    private readonly runCommand: CommandRunner,
    /** What the client's credentials allow, decided at the upgrade. */
    readonly scope: Scope,
    /**
     * Whether failed commands are answered. EVOK never answered them, and its
     * clients (Home Assistant's above all) take every frame for a device list.
     */
    readonly errorReplies = false,
    /** Whether pushes and replies carry the meta view (quality, ts, age_s, counter_total). */
    readonly meta = false,
    /** Who the client is, decided at the upgrade, for the audit log. */
    readonly actor: Actor = UNKNOWN_ACTOR,
  ) {}

  /** Aborted once the socket closed: writes it asked for and that still wait for the line are dropped. */
  get closed(): AbortSignal {
    if (!this.closedController) {
      const controller = (this.closedController = new AbortController());
      if (this.socket.readyState === WebSocket.CLOSED) controller.abort();
      else this.socket.once('close', () => controller.abort());
    }
    return this.closedController.signal;
  }

  receive(data: RawData, isBinary: boolean): void {
    if (this.closing) return;
    if (this.commands.push(data, isBinary, this.backlogged()) === 'overflow') {
      this.closeForPolicy('too many commands waiting: read the replies');
      return;
    }
    if (!this.runningCommand) void this.runCommands();
    else this.updateReading();
  }

  /** The command just run failed through the client's fault (bad JSON, unknown circuit …). */
  noteFailure(): void {
    this.invalid.failed();
  }

  /** Commands received and not run yet. */
  get queuedCommands(): number {
    return this.commands.length;
  }

  private async runCommands(): Promise<void> {
    this.runningCommand = true;
    this.updateReading();
    let thisTurn = 0;
    while (!this.closing && this.socket.readyState === WebSocket.OPEN && !this.backlogged() && this.commands.length > 0) {
      const verdict = this.invalid.admit(this.commands.length - 1);
      if (verdict === 'close') {
        this.closeForPolicy('too many invalid messages');
        break;
      }
      if (verdict === 'wait') {
        await pause(this.invalid.waitMs());
        continue;
      }
      const next = this.commands.shift()!;
      await commandTurns.run(() => this.runCommand(this, next[0], next[1]));
      if (++thisTurn >= WS_BUDGET.COMMANDS_PER_TURN) {
        thisTurn = 0;
        await yieldTurn();
      }
    }
    this.runningCommand = false;
    this.updateReading();
  }

  /** Replies and pushes waiting for the client past its budget: commands wait until it reads. */
  private backlogged(): boolean {
    return this.socket.bufferedAmount > WS_BUDGET.REPLY_BACKLOG_BYTES;
  }

  private closeForPolicy(reason: string): void {
    if (this.closing) return;
    this.closing = true;
    this.commands.clear();
    this.pending.clear();
    if (this.socket.readyState !== WebSocket.OPEN) return;
    this.socket.close(CLOSE_POLICY, reason);
    // A client that does not read will not answer the close handshake either.
    setTimeout(() => this.socket.terminate(), WS_BUDGET.CLOSE_GRACE_MS).unref();
  }

  private updateReading(): void {
    if (this.socket.readyState !== WebSocket.OPEN) return;
    const hold = this.closing || this.backlogged()
      || (this.runningCommand ? this.commands.length >= MAX_WAITING_COMMANDS : this.commands.length > 0);
    if (hold && !this.socket.isPaused) this.socket.pause();
    else if (!hold && this.socket.isPaused) this.socket.resume();
  }

  setFilter(types: ReadonlySet<DeviceType> | undefined): void {
    this.filter = types;
    if (types) for (const device of this.pending) if (!types.has(device.type)) this.pending.delete(device);
  }

  get filterTypes(): ReadonlySet<DeviceType> | undefined {
    return this.filter;
  }

  /** Devices waiting for the client to catch up. */
  get pendingCount(): number {
    return this.pending.size;
  }

  push(batch: OutgoingBatch): void {
    if (this.socket.readyState !== WebSocket.OPEN || this.closing) return;
    const { filter } = this;
    if (!filter && this.pending.size === 0 && this.keepingUp()) {
      this.send(this.meta ? batch.metaMessage() : batch.message());
      return;
    }
    for (const device of batch.devices) if (!filter || filter.has(device.type)) this.pending.add(device);
    this.flush();
  }

  /** Answer a command; commands run only while the client is within its reply budget. */
  reply(text: string | Buffer): void {
    if (this.socket.readyState !== WebSocket.OPEN || this.closing) return;
    commandTurns.replied(text.length);
    this.send(text);
  }

  private keepingUp(): boolean {
    return this.socket.bufferedAmount < KEEPING_UP_BYTES;
  }

  private flush(): void {
    if (this.pending.size === 0 || this.socket.readyState !== WebSocket.OPEN || !this.keepingUp()) return;
    const parts: string[] = [];
    const now = performance.now();
    for (const device of this.pending) parts.push(this.meta ? device.metaJson(now) : device.json());
    this.pending.clear();
    this.send(`[${parts.join(',')}]`);
  }

  /**
   * Every frame is a text frame, as EVOK's: `ws` would send a Buffer as a
   * binary frame, which browsers hand over as a Blob and Node-RED as a Buffer,
   * and EVOK's clients cannot parse either.
   *
   * `ws` has no drain event; the callback of a send runs once its bytes are
   * handed to the kernel. While the client is behind, some send is still
   * outstanding, so its callback is where the outbox gets its next chance.
   */
  private send(data: string | Buffer): void {
    this.socket.send(data, TEXT_FRAME, this.afterSend);
  }

  private readonly afterSend = (error?: Error): void => {
    if (error || !this.keepingUp() || this.closing) return;
    if (!this.runningCommand) {
      if (this.commands.length > 0) void this.runCommands();
      else this.updateReading();
    }
    this.flush();
  };
}
