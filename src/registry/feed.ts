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

  subscribe(listener: FeedListener, { includeSilent = false }: FeedOptions = {}): () => void {
    this.listeners.set(listener, includeSilent);
    return () => this.listeners.delete(listener);
  }

  publish(devices: readonly Device[]): void {
    if (devices.length === 0) return;
    let events: readonly Device[] | undefined;
    for (const [listener, includeSilent] of this.listeners) {
      if (includeSilent) {
        listener(devices);
        continue;
      }
      events ??= devices.filter((device) => device.eventCapable && device.changeIsEvent);
      if (events.length > 0) listener(events);
    }
  }
}
