import type { Device } from '../devices/device.js';

// The one stream of device changes that every push interface reads: WebSocket,
// webhooks and MQTT. A batch holds the devices that changed together (one
// slave's scan, or one write). Listeners must return quickly and never throw:
// each one queues its own delivery, so a slow consumer cannot hold up polling.

export type FeedListener = (devices: readonly Device[]) => void;

export class ChangeFeed {
  private readonly listeners = new Set<FeedListener>();

  subscribe(listener: FeedListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  publish(devices: readonly Device[]): void {
    if (devices.length === 0) return;
    for (const listener of this.listeners) listener(devices);
  }
}
