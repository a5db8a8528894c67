import { WebSocket, type RawData } from 'ws';
import type { Device, DeviceType } from '../../devices/device.js';
import type { Scope } from '../access/auth.js';

// One WebSocket connection: its push filter and its outbox. The outbox is a
// set of devices, not a queue of messages: a device that changes again before
// the client caught up is sent once, with its state at sending time. So a slow
// reader gets the latest state of everything that changed, the memory held
// for it is bounded by the number of devices, and nobody waits for it.
//
// Commands run one at a time in arrival order, so a `full` sent after a `set`
// sees the write. While one runs, the socket is not read, which makes a
// client that floods commands wait in TCP instead of in our memory.

/** Below this many unsent bytes the client counts as keeping up. */
const KEEPING_UP_BYTES = 16 * 1024;
/**
 * A client that sends commands but does not read the replies stops being
 * read from (TCP pushes back on it) once this much is waiting for it.
 */
const STOP_READING_BYTES = 1024 * 1024;

/**
 * A change batch as sent to clients without a filter, serialised once for all
 * of them. It is kept as UTF-8 bytes but always sent as a text frame (see send).
 */
export class OutgoingBatch {
  private text: Buffer | undefined;

  constructor(readonly devices: readonly Device[]) {}

  message(): Buffer {
    return (this.text ??= Buffer.from(`[${this.devices.map((device) => device.json()).join(',')}]`));
  }
}

const TEXT_FRAME = { binary: false } as const;

export type CommandRunner = (client: WsClient, data: RawData, isBinary: boolean) => Promise<void>;

export class WsClient {
  /** Types pushed to this client; undefined is EVOK's "default" filter: everything. */
  private filter: ReadonlySet<DeviceType> | undefined;
  private readonly pending = new Set<Device>();
  /** Frames that arrived while a command ran; `ws` may deliver a few after a pause. */
  private readonly commands: Array<[RawData, boolean]> = [];
  private runningCommand = false;
  private repliesBacklogged = false;
  /** Cleared by each heartbeat, set again by the peer's pong. */
  alive = true;

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
  ) {}

  receive(data: RawData, isBinary: boolean): void {
    this.commands.push([data, isBinary]);
    if (!this.runningCommand) void this.runCommands();
  }

  private async runCommands(): Promise<void> {
    this.runningCommand = true;
    this.updateReading();
    for (let next = this.commands.shift(); next; next = this.commands.shift()) {
      await this.runCommand(this, next[0], next[1]);
    }
    this.runningCommand = false;
    this.updateReading();
  }

  private updateReading(): void {
    if (this.socket.readyState !== WebSocket.OPEN) return;
    const hold = this.runningCommand || this.repliesBacklogged;
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
    if (this.socket.readyState !== WebSocket.OPEN) return;
    const { filter } = this;
    if (!filter && this.pending.size === 0 && this.keepingUp()) {
      this.send(batch.message());
      return;
    }
    for (const device of batch.devices) if (!filter || filter.has(device.type)) this.pending.add(device);
    this.flush();
  }

  /** Answer a command; replies are few and follow the client's own requests. */
  reply(text: string): void {
    if (this.socket.readyState !== WebSocket.OPEN) return;
    this.send(text);
    if (this.socket.bufferedAmount > STOP_READING_BYTES) {
      this.repliesBacklogged = true;
      this.updateReading();
    }
  }

  private keepingUp(): boolean {
    return this.socket.bufferedAmount < KEEPING_UP_BYTES;
  }

  private flush(): void {
    if (this.pending.size === 0 || this.socket.readyState !== WebSocket.OPEN || !this.keepingUp()) return;
    const parts: string[] = [];
    for (const device of this.pending) parts.push(device.json());
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
    if (error || !this.keepingUp()) return;
    if (this.repliesBacklogged) {
      this.repliesBacklogged = false;
      this.updateReading();
    }
    this.flush();
  };
}
