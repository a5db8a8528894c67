import { once } from 'node:events';
import WebSocket from 'ws';

// A WebSocket test client that keeps every message it receives and lets the
// test wait for the next one, or for one that matches.

type Message = any;

export interface TestClient {
  ws: WebSocket;
  /** Every parsed message so far, oldest first. */
  received: Message[];
  /** The next message not yet taken (in arrival order). */
  next(limitMs?: number): Promise<Message>;
  /** Skip messages until one satisfies `match`, and return it. */
  nextMatching(match: (message: Message) => boolean, limitMs?: number): Promise<Message>;
  /** The next command reply: replies are objects, pushes are arrays. */
  reply(limitMs?: number): Promise<Message>;
  send(message: unknown): void;
  close(): Promise<void>;
}

/** `options`: the ws client's own, e.g. the `ca` to trust and headers for a wss:// URL. */
export async function connect(url: string, options?: WebSocket.ClientOptions): Promise<TestClient> {
  const ws = new WebSocket(url, options);
  const received: Message[] = [];
  let taken = 0;
  let wake: (() => void) | undefined;
  ws.on('message', (data) => {
    received.push(JSON.parse(String(data)));
    wake?.();
  });
  await once(ws, 'open');
  const next = async (limitMs = 5000): Promise<Message> => {
    if (taken < received.length) return received[taken++];
    const timer = setTimeout(() => wake?.(), limitMs);
    try {
      await new Promise<void>((resolve) => (wake = resolve));
    } finally {
      clearTimeout(timer);
      wake = undefined;
    }
    if (taken < received.length) return received[taken++];
    throw new Error(`no WebSocket message within ${limitMs} ms`);
  };
  const nextMatching = async (match: (message: Message) => boolean, limitMs = 5000): Promise<Message> => {
    const deadline = Date.now() + limitMs;
    for (;;) {
      const message = await next(Math.max(1, deadline - Date.now()));
      if (match(message)) return message;
    }
  };
  return {
    ws,
    received,
    next,
    nextMatching,
    reply: (limitMs) => nextMatching((message) => !Array.isArray(message), limitMs),
    send: (message) => ws.send(typeof message === 'string' ? message : JSON.stringify(message)),
    async close() {
      if (ws.readyState === WebSocket.CLOSED) return;
      ws.close();
      await once(ws, 'close');
    },
  };
}

/** The device `circuit` of type `dev` in a pushed array, if there. */
export function deviceIn(message: Message, dev: string, circuit: string): Message | undefined {
  return Array.isArray(message) ? message.find((item) => item.dev === dev && item.circuit === circuit) : undefined;
}
