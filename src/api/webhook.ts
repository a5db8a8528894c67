import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { WebhookConfig } from '../config/types.js';
import type { Device } from '../devices/device.js';
import type { Logger } from '../logging/log.js';
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
//
// A request has one deadline for all of it: connecting, the answer's head and
// its body. At the deadline its socket is destroyed, so a receiver that
// accepts and never answers (a Node-RED flow without an `http response`
// node), answers slowly or drips its body holds nothing of ours beyond it,
// and the next attempt starts on a fresh connection.

export interface WebhookOptions {
  /** Deadline of one request, from its start to the end of the answer. */
  timeoutMs?: number;
  firstRetryMs?: number;
  maxRetryMs?: number;
}

/** What `/metrics` shows of the webhook. */
export interface WebhookStats {
  /** Devices not delivered yet, in the request out now or waiting (each once, in its latest state). */
  readonly pending: number;
  /** Requests answered with a status below 400. */
  readonly delivered: number;
  /** Failed attempts by cause: no answer by the deadline, an error status, or a connection error. */
  readonly failed: { readonly timeout: number; readonly status: number; readonly network: number };
  /** Changes never sent on their own: the device changed again before its delivery, and only its latest state went out. */
  readonly superseded: number;
  /** False from the first failed attempt until a delivery succeeds again. */
  readonly up: boolean;
  /** The pause before the next retry while failing (0 when up). */
  readonly retryMs: number;
}

export interface Webhook {
  /** Devices waiting to be delivered. */
  readonly pendingCount: number;
  readonly stats: WebhookStats;
  stop(): void;
}

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
      return sender.stats.pending;
    },
    stats: sender.stats,
    stop() {
      unsubscribe();
      sender.stop();
    },
  };
}

/** Why an attempt failed, as counted in the stats. */
class DeliveryError extends Error {
  constructor(
    message: string,
    readonly reason: keyof WebhookStats['failed'],
  ) {
    super(message);
  }
}

class WebhookSender {
  private pending = new Set<Device>();
  /** The devices of the request out now. */
  private sending: readonly Device[] = [];
  /** A request is out, or a retry pause or a scheduled start is running. */
  private busy = false;
  private timer: NodeJS.Timeout | undefined;
  private immediate: NodeJS.Immediate | undefined;
  private inFlight: ClientRequest | undefined;
  private retryMs: number;
  private failing = false;
  private stopped = false;
  private readonly timeoutMs: number;
  private readonly firstRetryMs: number;
  private readonly maxRetryMs: number;
  private readonly counts = { delivered: 0, superseded: 0, failed: { timeout: 0, status: 0, network: 0 } };

  constructor(
    private readonly config: WebhookConfig,
    private readonly log: Logger,
    { timeoutMs = 5000, firstRetryMs = 500, maxRetryMs = 30_000 }: WebhookOptions,
  ) {
    this.timeoutMs = timeoutMs;
    this.firstRetryMs = firstRetryMs;
    this.maxRetryMs = maxRetryMs;
    this.retryMs = firstRetryMs;
  }

  readonly stats: WebhookStats = (() => {
    const sender = this;
    return {
      get pending() {
        let count = sender.pending.size;
        for (const device of sender.sending) if (!sender.pending.has(device)) count++;
        return count;
      },
      get delivered() {
        return sender.counts.delivered;
      },
      get failed() {
        return sender.counts.failed;
      },
      get superseded() {
        return sender.counts.superseded;
      },
      get up() {
        return !sender.failing;
      },
      get retryMs() {
        return sender.failing ? sender.retryMs : 0;
      },
    };
  })();

  add(device: Device): void {
    if (this.pending.has(device)) this.counts.superseded++;
    else this.pending.add(device);
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
    this.inFlight?.destroy();
  }

  private deliver(): void {
    if (this.stopped) return;
    if (this.pending.size === 0) {
      this.busy = false;
      return;
    }
    const devices = [...this.pending];
    this.pending.clear();
    this.sending = devices;
    this.send(devices).then(
      () => {
        this.sending = [];
        this.counts.delivered++;
        if (this.failing) this.log.info(`webhook: ${this.config.address} reachable again`);
        this.failing = false;
        this.retryMs = this.firstRetryMs;
        this.deliver();
      },
      (error: DeliveryError) => {
        this.sending = [];
        if (this.stopped) return;
        this.counts.failed[error.reason]++;
        if (!this.failing) this.log.warn(`webhook: delivery to ${this.config.address} failed (${error.message}); retrying`);
        else this.log.debug(`webhook: retry failed (${error.message}); next in ${Math.min(this.retryMs * 2, this.maxRetryMs)} ms`);
        // The first failure keeps the first pause; the pauses grow from there.
        if (this.failing) this.retryMs = Math.min(this.retryMs * 2, this.maxRetryMs);
        this.failing = true;
        // Devices that changed meanwhile stay where they are; the failed ones
        // rejoin in front, to be sent with whatever state they have by then.
        for (const device of this.pending) if (devices.includes(device)) this.counts.superseded++;
        this.pending = new Set([...devices, ...this.pending]);
        this.timer = setTimeout(() => this.deliver(), this.retryMs);
      },
    );
  }

  /** One request, settled by its answer's end, an error, or the deadline (which destroys its socket). */
  private send(devices: readonly Device[]): Promise<void> {
    const { address, complexEvents, meta } = this.config;
    const url = new URL(address);
    const now = performance.now();
    const body = complexEvents ? JSON.stringify(devices.map((device) => (meta ? device.metaFull(now) : device.full()))) : undefined;
    const headers: Record<string, string | number> = { 'content-type': 'application/json; charset=utf-8', 'user-agent': 'iogate' };
    if (body !== undefined) headers['content-length'] = Buffer.byteLength(body);
    const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise((resolve, reject) => {
      let settled = false;
      const finish = (error?: DeliveryError) => {
        if (settled) return;
        settled = true;
        clearTimeout(deadline);
        this.inFlight = undefined;
        if (error) {
          req.destroy();
          reject(error);
        } else resolve();
      };
      // A fresh connection each time (no agent): nothing of a request given up on can delay the next.
      const req = request(url, { method: complexEvents ? 'POST' : 'GET', headers, agent: false });
      this.inFlight = req;
      const deadline = setTimeout(() => finish(new DeliveryError(`no complete answer within ${this.timeoutMs} ms`, 'timeout')), this.timeoutMs);
      req.on('error', (error) => finish(new DeliveryError(error.message, 'network')));
      req.on('response', (res: IncomingMessage) => {
        res.on('error', (error) => finish(new DeliveryError(error.message, 'network')));
        // The answer's body is of no use to us: read and dropped, never kept.
        res.resume();
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          // As EVOK's client: an answer below 400 is a delivery (redirects are not followed).
          if (status < 400) finish();
          else finish(new DeliveryError(`HTTP ${status}`, 'status'));
        });
        res.on('close', () => finish(new DeliveryError('the connection closed before the answer ended', 'network')));
      });
      req.end(body);
    });
  }
}
