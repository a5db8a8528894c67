import type { Device } from '../devices/device.js';

// The one stream of device changes that every push interface reads: WebSocket,
// webhooks and MQTT. A batch holds the devices that changed together (one
// slave's scan, or one write). Listeners must return quickly and never throw:
// each one queues its own delivery, so a slow consumer cannot hold up polling.

export type FeedListener = (devices: readonly Device[]) => void;

export interface FeedOptions {
  /**
   * Also receive devices EVOK never pushes (`eventCapable` false, e.g. raw
   * registers, EVOK#214) and changes of settings alone (an alias, a
   * watchdog's timeout). MQTT mirrors every state; WebSocket and webhooks
   * keep EVOK's event set.
   */
  includeSilent?: boolean;
}

export class ChangeFeed {
  private readonly listeners = new Map<FeedListener, boolean>();
  private readonly qualityListeners = new Set<FeedListener>();
  /**
   * Boards' first states that came before the push interfaces started (the
   * daemon starts them once every board was read once), one batch per board
   * at most; undefined once they were handed over.
   */
  private waitingFirstStates: Array<readonly Device[]> | undefined = [];

  subscribe(listener: FeedListener, { includeSilent = false }: FeedOptions = {}): () => void {
    this.listeners.set(listener, includeSilent);
    return () => this.listeners.delete(listener);
  }

  /**
   * Devices whose quality changed (good, stale, offline) while EVOK's fields
   * did not. Only meta-view consumers listen: EVOK's clients never saw such
   * pushes and must not start now.
   */
  subscribeQuality(listener: FeedListener): () => void {
    this.qualityListeners.add(listener);
    return () => this.qualityListeners.delete(listener);
  }

  publishQuality(devices: readonly Device[]): void {
    const events = devices.filter((device) => device.eventCapable);
    if (events.length === 0) return;
    for (const listener of this.qualityListeners) listener(events);
  }

  /**
   * `firstState`: the board these devices belong to came online for the first
   * time, and these are all its devices. EVOK reported every device of a board
   * on the first poll after start, so its webhook and WebSocket clients got
   * the full state once: listeners that follow EVOK's event set get the
   * board's events (all of them, not only what changed) instead of the
   * changes. Listeners of every state (MQTT) get the changes as usual: they
   * publish the full state themselves when they connect.
   */
  publish(devices: readonly Device[], firstState?: readonly Device[]): void {
    let events: readonly Device[] | undefined;
    if (firstState !== undefined) {
      events = firstState.filter((device) => device.eventCapable);
      // Before the push interfaces started, the batch waits for them, and the changes go as ever.
      if (this.waitingFirstStates !== undefined) {
        if (events.length > 0) this.waitingFirstStates.push(events);
        events = undefined;
      }
    }
    if (devices.length === 0 && (events === undefined || events.length === 0)) return;
    for (const [listener, includeSilent] of this.listeners) {
      if (includeSilent) {
        if (devices.length > 0) listener(devices);
        continue;
      }
      events ??= devices.filter((device) => device.eventCapable && device.changeIsEvent);
      if (events.length > 0) listener(events);
    }
  }

  /**
   * Called once the push interfaces started: the first states of the boards
   * read before then go to them, each as its own batch (one per board, as
   * EVOK's first polls did), and later first states go out when they come.
   */
  releaseFirstStates(): void {
    const waiting = this.waitingFirstStates;
    if (waiting === undefined) return;
    this.waitingFirstStates = undefined;
    for (const events of waiting) {
      for (const [listener, includeSilent] of this.listeners) if (!includeSilent) listener(events);
    }
  }
}

