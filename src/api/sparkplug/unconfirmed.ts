import type { MqttClient } from 'mqtt';
import type { BufferedChange } from './store-forward.js';

// DATA goes out at QoS 0, as Sparkplug asks, so nothing tells us the broker
// got it. A link that goes silent (a cut cable, a partition: no reset, no
// close) swallows whatever is written to it until the keep alive runs out,
// seconds later; those changes were neither delivered nor buffered. So every
// change sent is kept here until a PINGRESP shows the broker read past it
// (one connection is read in order, so the answer to a PINGREQ written after
// a change comes after that change was taken), and a PINGREQ follows a change
// shortly, which keeps this tail about that long. When the connection is lost
// the tail goes back to store-and-forward and is replayed as historical after
// the next birth. A change that did arrive but whose ping was not answered yet
// reaches the host twice, live and historical, with the same timestamp: a
// historian stores it once, while a change missing is gone for good.

/** A change waits at most this long before a PINGREQ asks the broker to confirm it. */
const CONFIRM_AFTER_MS = 500;

export class UnconfirmedTail {
  private entries: BufferedChange[] = [];
  private head = 0;
  /** Changes ever added before entries[head]. */
  private confirmedCount = 0;
  /** For each PINGREQ written and not answered yet: how many changes had been added when it was written. */
  private pings: number[] = [];
  private client: MqttClient | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** Oldest changes let go unconfirmed because the tail was full. */
  overflowed = 0;

  /** `capacity`: changes held at most (the oldest are let go first: they are the likeliest to have arrived). */
  constructor(private readonly capacity: number) {}

  get depth(): number {
    return this.entries.length - this.head;
  }

  /** Follows the pings of a new connection; whatever the last one left is gone by now (see takeAll). */
  watch(client: MqttClient): void {
    this.client = client;
    this.pings = [];
    client.on('packetsend', (packet) => {
      if (client === this.client && packet.cmd === 'pingreq') this.pings.push(this.added);
    });
    client.on('packetreceive', (packet) => {
      if (client === this.client && packet.cmd === 'pingresp') this.answered();
    });
  }

  /** A change just published on the watched connection. */
  sent(change: BufferedChange): void {
    if (this.capacity === 0) return;
    if (this.depth >= this.capacity) {
      this.head++;
      this.confirmedCount++;
      this.overflowed++;
    }
    this.entries.push(change);
    this.compact();
    this.schedule();
  }

  /** Everything written before an acknowledged packet (our NDEATH's PUBACK) was read by the broker. */
  confirmAll(): void {
    this.confirmedCount = this.added;
    this.entries = [];
    this.head = 0;
  }

  /** The connection is gone: the changes it may have swallowed, oldest first, and nothing held any more. */
  takeAll(): BufferedChange[] {
    const taken = this.entries.slice(this.head);
    this.confirmAll();
    this.pings = [];
    this.client = undefined;
    clearTimeout(this.timer);
    this.timer = undefined;
    return taken;
  }

  private get added(): number {
    return this.confirmedCount + this.depth;
  }

  private answered(): void {
    const mark = this.pings.shift();
    if (mark !== undefined && mark > this.confirmedCount) {
      this.head += mark - this.confirmedCount;
      this.confirmedCount = mark;
      this.compact();
    }
    this.schedule();
  }

  /** A PINGREQ soon, unless one is on its way (its answer schedules the next) or nothing waits. */
  private schedule(): void {
    if (this.timer !== undefined || this.pings.length > 0 || this.depth === 0) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      const client = this.client;
      if (this.depth > 0 && this.pings.length === 0 && client?.connected) client.sendPing();
    }, CONFIRM_AFTER_MS);
    this.timer.unref();
  }

  /** Drops the confirmed prefix once it outweighs the rest, so the array does not grow without bound. */
  private compact(): void {
    if (this.head > 1024 && this.head * 2 > this.entries.length) {
      this.entries = this.entries.slice(this.head);
      this.head = 0;
    }
  }
}
