import type { SparkplugServer } from '../../config/types.js';

// Which of the configured servers the edge node is on or tries next, and how
// long it waits first. An edge node is connected to one server at a time and
// walks the list in order: on to the next one 250 ms after a session ended;
// after a whole round of attempts that never got a session, the wait doubles,
// up to 10 s, so a site whose brokers are all down costs little. It also
// remembers which servers refused MQTT 5, to speak 3.1.1 with them from then
// on.

export const FIRST_RETRY_MS = 250;
export const MAX_RETRY_MS = 10_000;

export class ServerWalk {
  private index = 0;
  private failuresInRound = 0;
  private retryMs = FIRST_RETRY_MS;
  private readonly mqtt311 = new Set<number>();

  constructor(private readonly servers: readonly SparkplugServer[]) {
    if (servers.length === 0) throw new Error('Sparkplug: no server configured');
  }

  /** The server of the current (or next) attempt, and its place in the list. */
  get current(): { server: SparkplugServer; index: number } {
    return { server: this.servers[this.index]!, index: this.index };
  }

  /**
   * On to the next server; returns how long to wait before trying it.
   * `hadSession`: the attempt that ended got as far as a birth (a fresh round begins).
   */
  advance(hadSession: boolean): number {
    this.index = (this.index + 1) % this.servers.length;
    if (hadSession) {
      this.failuresInRound = 0;
      this.retryMs = FIRST_RETRY_MS;
      return FIRST_RETRY_MS;
    }
    if (++this.failuresInRound >= this.servers.length) {
      // A whole round failed: wait longer before the next one.
      this.failuresInRound = 0;
      this.retryMs = Math.min(this.retryMs * 2, MAX_RETRY_MS);
    }
    return this.retryMs;
  }

  /** Whether the server at `index` is spoken to in MQTT 3.1.1 (it refused MQTT 5). */
  speaks311(index: number): boolean {
    return this.mqtt311.has(index);
  }

  /** Speak MQTT 3.1.1 with the server at `index` from now on; false if that was so already. */
  fallBackTo311(index: number): boolean {
    if (this.mqtt311.has(index)) return false;
    this.mqtt311.add(index);
    return true;
  }
}
