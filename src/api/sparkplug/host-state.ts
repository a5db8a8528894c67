import type { QuietLog } from './quiet-log.js';

// Which STATE messages of the primary host count. A host (or its broker)
// may publish garbage, and a retained STATE can be older than one already
// seen on another server: only a well-formed STATE that is not older than
// the newest one seen says whether the host is online. What the node then
// does (birth, leave, wait) is the node's business, in edge-node.ts.

/** A STATE larger than this is not a host's `{"online", "timestamp"}`. */
const MAX_STATE_BYTES = 1024;

export class PrimaryHostState {
  /** Newest STATE timestamp seen from the primary host (on any server): older ones are ignored. */
  private hostStateAt = -Infinity;

  constructor(private readonly quiet: QuietLog) {}

  /** Whether the host says it is online; undefined when this STATE does not count (malformed or stale). */
  online(payload: Buffer): boolean | undefined {
    let state: unknown;
    try {
      state = payload.length <= MAX_STATE_BYTES ? JSON.parse(payload.toString('utf8')) : undefined;
    } catch {
      state = undefined;
    }
    const { online, timestamp } = (state ?? {}) as { online?: unknown; timestamp?: unknown };
    if (typeof online !== 'boolean' || typeof timestamp !== 'number' || !Number.isFinite(timestamp)) {
      this.quiet.note('state', `Sparkplug: STATE of the primary host ignored: not {"online": true|false, "timestamp": ms}`);
      return undefined;
    }
    if (timestamp < this.hostStateAt) {
      this.quiet.note('state-old', `Sparkplug: STATE of the primary host ignored: timestamp ${timestamp} is older than ${this.hostStateAt}`);
      return undefined;
    }
    this.hostStateAt = timestamp;
    return online;
  }
}
