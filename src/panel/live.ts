import { socketUrl, type Device } from './api.js';

// The live feed: /ws pushes JSON arrays of changed devices (a single object
// for a `full` reply or an older daemon). Error replies are ignored. After a
// drop (daemon restart, network) it reconnects with a growing pause, and
// reports each state so the page can show it.

export type LinkState = { kind: 'connecting' } | { kind: 'live' } | { kind: 'down'; retryInMs: number };

const FIRST_RETRY_MS = 500;
const LAST_RETRY_MS = 10_000;

export interface LiveFeedOptions {
  onDevices(devices: Device[]): void;
  onState(state: LinkState): void;
  /** Called on every (re)connection, before the first push: time to resynchronise. */
  onOpen(): void;
}

export function startLiveFeed(options: LiveFeedOptions): { restart(): void } {
  let retryMs = FIRST_RETRY_MS;
  let socket: WebSocket | undefined;
  let timer: number | undefined;

  const connect = (): void => {
    timer = undefined;
    options.onState({ kind: 'connecting' });
    const current = new WebSocket(socketUrl());
    socket = current;
    current.onopen = () => {
      retryMs = FIRST_RETRY_MS;
      options.onState({ kind: 'live' });
      options.onOpen();
    };
    current.onmessage = (event: MessageEvent) => {
      // Text frames; a binary frame from an older daemon is decoded the same way.
      if (typeof event.data === 'string') deliver(event.data);
      else if (event.data instanceof Blob) void event.data.text().then(deliver);
    };
    current.onclose = () => {
      if (socket !== current) return;
      socket = undefined;
      options.onState({ kind: 'down', retryInMs: retryMs });
      timer = window.setTimeout(connect, retryMs);
      retryMs = Math.min(retryMs * 2, LAST_RETRY_MS);
    };
  };

  const deliver = (text: string): void => {
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      return;
    }
    const list = Array.isArray(message) ? message : [message];
    const devices = list.filter(
      (item): item is Device => !!item && typeof item === 'object' && typeof item.dev === 'string' && typeof item.circuit === 'string',
    );
    if (devices.length > 0) options.onDevices(devices);
  };

  socket = undefined;
  connect();
  return {
    /** Reconnects now (a new token was entered). */
    restart() {
      if (timer !== undefined) window.clearTimeout(timer);
      const old = socket;
      socket = undefined;
      old?.close();
      retryMs = FIRST_RETRY_MS;
      connect();
    },
  };
}
