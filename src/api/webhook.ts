import tiny from 'tiny-json-http';
import type { WebhookConfig } from '../config/types.js';
import type { Device } from '../devices/device.js';
import type { Logger } from '../log.js';
import type { ChangeFeed } from '../registry/feed.js';
import { parseTypeNames } from './http/type-filter.js';

// EVOK's outgoing webhook: on changes of the masked device types, GET the
// configured address (`complex_events: false`, no body) or POST it a JSON
// array of the changed devices (`true`).
//
// Delivery happens beside the poll loop, never in it: the feed listener only
// marks devices. One request is out at a time; changes that arrive meanwhile
// wait in a set of devices, so a device that changes again is sent once with
// its latest state, and what waits for a dead receiver is bounded by the
// number of devices. Failed deliveries are retried with growing pauses.

export interface WebhookOptions {
  /** A request not answered within this is given up and retried. */
  timeoutMs?: number;
  firstRetryMs?: number;
  maxRetryMs?: number;
}

export interface Webhook {
  /** Devices waiting to be delivered. */
  readonly pendingCount: number;
  stop(): void;
}

/**
 * Requests given up on by our timeout still hold a socket until the receiver
 * or the OS ends them. Past this many, no new request is started (it counts as
 * a failed attempt), so a receiver that swallows connections cannot make us
 * open sockets without end.
 */
const MAX_UNSETTLED_REQUESTS = 4;

export function startWebhook(config: WebhookConfig, feed: ChangeFeed, log: Logger, options: WebhookOptions = {}): Webhook {
  const { types: mask, unknown } = parseTypeNames(config.deviceMask);
  if (unknown.length > 0) log.warn(`webhook: device_mask entries that name no device type are ignored: ${unknown.join(', ')}`);
  const sender = new WebhookSender(config, log, options);
  const add = (devices: readonly Device[]) => {
    for (const device of devices) if (mask.has(device.type)) sender.add(device);
  };
  const unsubscribeChanges = feed.subscribe(add);
  // Quality changes are news only to a receiver of the meta view.
  const unsubscribeQuality = config.complexEvents && config.meta ? feed.subscribeQuality(add) : () => {};
  const unsubscribe = () => {
    unsubscribeChanges();
    unsubscribeQuality();
  };
  return {
    get pendingCount() {
      return sender.pendingCount;
    },
    stop() {
      unsubscribe();
      sender.stop();
    },
  };
}

class WebhookSender {
  private pending = new Set<Device>();
  /** A request is out, or a retry pause or a scheduled start is running. */
  private busy = false;
  private timer: NodeJS.Timeout | undefined;
  private immediate: NodeJS.Immediate | undefined;
  private unsettled = 0;
  private retryMs: number;
  private failing = false;
  private stopped = false;
  private readonly timeoutMs: number;
  private readonly firstRetryMs: number;
  private readonly maxRetryMs: number;

  constructor(
    private readonly config: WebhookConfig,
    private readonly log: Logger,
    { timeoutMs = 5000, firstRetryMs = 500, maxRetryMs = 60_000 }: WebhookOptions,
  ) {
    this.timeoutMs = timeoutMs;
    this.firstRetryMs = firstRetryMs;
    this.maxRetryMs = maxRetryMs;
    this.retryMs = firstRetryMs;
  }

  get pendingCount(): number {
    return this.pending.size;
  }

  add(device: Device): void {
    this.pending.add(device);
    if (this.busy || this.stopped) return;
    // Started on the next turn: the feed listener returns at once, and the
    // rest of this scan's changes join the same request.
    this.busy = true;
    this.immediate = setImmediate(() => this.deliver());
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    clearImmediate(this.immediate);
  }

  private deliver(): void {
    if (this.stopped) return;
    if (this.pending.size === 0) {
      this.busy = false;
      return;
    }
    const devices = [...this.pending];
    this.pending.clear();
    this.request(devices).then(
      () => {
        if (this.failing) this.log.info(`webhook: ${this.config.address} reachable again`);
        this.failing = false;
        this.retryMs = this.firstRetryMs;
        this.deliver();
      },
      (error: Error) => {
        if (!this.failing) this.log.warn(`webhook: delivery to ${this.config.address} failed (${error.message}); retrying`);
        this.failing = true;
        // Devices that changed meanwhile stay where they are; the failed ones
        // rejoin in front, to be sent with whatever state they have by then.
        this.pending = new Set([...devices, ...this.pending]);
        this.timer = setTimeout(() => this.deliver(), this.retryMs);
        this.retryMs = Math.min(this.retryMs * 2, this.maxRetryMs);
      },
    );
  }

  private request(devices: readonly Device[]): Promise<unknown> {
    if (this.unsettled >= MAX_UNSETTLED_REQUESTS) {
      return Promise.reject(new Error(`${this.unsettled} earlier requests are still hanging`));
    }
    const { address: url, complexEvents, meta } = this.config;
    const headers = { 'content-type': 'application/json' };
    const now = Date.now();
    const sent = complexEvents
      ? tiny.post({ url, headers, data: devices.map((device) => (meta ? device.metaFull(now) : device.full())), buffer: true })
      : tiny.get({ url, headers, buffer: true });
    this.unsettled++;
    const settled = () => this.unsettled--;
    sent.then(settled, settled);
    return new Promise((resolve, reject) => {
      const timeout = setTimeout(() => reject(new Error(`no answer within ${this.timeoutMs} ms`)), this.timeoutMs);
      sent.then(
        (response) => {
          clearTimeout(timeout);
          resolve(response);
        },
        (error: unknown) => {
          clearTimeout(timeout);
          reject(error instanceof Error ? error : new Error(String(error)));
        },
      );
    });
  }
}
