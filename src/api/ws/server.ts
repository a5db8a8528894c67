import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Logger } from '../../logging/log.js';
import { requestActor, type Scope } from '../access/auth.js';
import { auditRefusal, auditResult } from '../../registry/audit-trail.js';
import type { ApiGuards } from '../access/guards.js';
import { markUpgraded } from '../http/admission.js';
import { wantsMeta } from '../http/device-routes.js';
import { endWithReply } from '../http/final-reply.js';
import { pathSegments } from '../http/server.js';
import { runCommand, type WsCommandContext } from './commands.js';
import { OutgoingBatch, WsClient } from './client.js';
import { admitUpgrade, refuseUpgrade } from './guard.js';

// EVOK's WebSocket at `/ws` on the HTTP port: change pushes from the change
// feed, and the client commands of ws-commands. Each client has its own
// outbox, so the feed listener only marks devices and never waits on a socket.

const DEFAULT_HEARTBEAT_MS = 30_000;

export interface WebSocketOptions {
  /** Ping period; a peer that has not answered the previous ping is dropped. */
  heartbeatMs?: number;
  /** Answer failed commands with an error object by default (`apis.websocket.error_replies`). */
  errorReplies?: boolean;
}

export interface WebSocketEndpoint {
  readonly clients: ReadonlySet<WsClient>;
  /**
   * After a reload changed the access settings: each client's upgrade request
   * is judged again, and a client that may no longer do what it was admitted
   * for is closed with 1008 (policy violation). The others stay connected.
   * New settings (message size, error replies) apply to clients that connect from now on.
   */
  settingsChanged(options: Pick<WebSocketOptions, 'errorReplies'>): number;
  /** Judges every client's upgrade request again (a panel session ended); closes with 1008 those no longer admitted as they were. */
  recheckAccess(reason: string): number;
  /** Says goodbye (1001 Going Away) to every client; resolves when all are gone. */
  close(): Promise<void>;
}

/** How long clients get to answer the closing handshake before their sockets are cut. */
const CLOSE_GRACE_MS = 1000;

export function attachWebSocket(
  server: Server,
  ctx: WsCommandContext,
  guards: ApiGuards,
  log: Logger,
  { heartbeatMs = DEFAULT_HEARTBEAT_MS, errorReplies = false }: WebSocketOptions = {},
): WebSocketEndpoint {
  const wss = new WebSocketServer({ noServer: true, maxPayload: guards.limits.maxWebSocketMessageBytes, perMessageDeflate: false, clientTracking: false });
  const clients = new Set<WsClient>();
  const upgrades = new WeakMap<WsClient, IncomingMessage>();
  let defaultErrorReplies = errorReplies;

  const connect = (socket: WebSocket, req: IncomingMessage, scope: Scope): void => {
    const wantsErrors = errorRepliesRequested(req.url ?? '/') ?? defaultErrorReplies;
    const client = new WsClient(socket, (sender, data, isBinary) => runCommand(ctx, sender, data, isBinary), scope, wantsErrors, wantsMeta(req.url ?? '/'), requestActor(req, guards.auth, 'websocket', { allowQueryToken: true }));
    clients.add(client);
    upgrades.set(client, req);
    const peer = `${req.socket.remoteAddress}:${req.socket.remotePort}`;
    log.debug(`WebSocket client ${peer} connected`);
    socket.on('pong', () => (client.alive = true));
    socket.on('message', (data, isBinary) => client.receive(data, isBinary));
    socket.on('error', (error) => log.debug(`WebSocket client ${peer}: ${error.message}`));
    socket.on('close', () => {
      clients.delete(client);
      log.debug(`WebSocket client ${peer} disconnected`);
    });
  };

  // node:http has taken its error listener off `upgraded`; the socket keeps
  // the one admission gave it at accept (http/socket-errors.ts), so a client
  // that resets while a refusal below is written costs it nothing but a count.
  const onUpgrade = (req: IncomingMessage, upgraded: Duplex, head: Buffer): void => {
    const socket = markUpgraded(upgraded);
    if (!isWebSocketPath(req.url ?? '/')) {
      endWithReply(socket, 'HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    const decision = admitUpgrade(req, guards, clients.size);
    if (!decision.admitted) {
      const { status } = decision.error;
      if (status === 401 || status === 403) auditRefusal(requestActor(req, guards.auth, 'websocket', { allowQueryToken: true }), '/ws', auditResult(decision.error));
      refuseUpgrade(socket, decision.error);
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => connect(ws, req, decision.scope));
  };
  server.on('upgrade', onUpgrade);

  const unsubscribeChanges = ctx.feed.subscribe((devices) => {
    if (clients.size === 0) return;
    const batch = new OutgoingBatch(devices);
    for (const client of clients) client.push(batch);
  });
  // Quality changes go to meta clients only: EVOK's clients get exactly EVOK's pushes.
  const unsubscribeQuality = ctx.feed.subscribeQuality((devices) => {
    let batch: OutgoingBatch | undefined;
    for (const client of clients) if (client.meta) client.push((batch ??= new OutgoingBatch(devices)));
  });
  const unsubscribe = () => {
    unsubscribeChanges();
    unsubscribeQuality();
  };

  const heartbeat = setInterval(() => {
    for (const client of clients) {
      if (!client.alive) {
        client.socket.terminate();
        continue;
      }
      client.alive = false;
      client.socket.ping();
    }
  }, heartbeatMs);
  heartbeat.unref();

  const recheckAccess = (reason: string): number => {
    let closed = 0;
    for (const client of clients) {
      const req = upgrades.get(client);
      if (req === undefined) continue;
      // As at the upgrade (host, origin, token), leaving out the client count, which this client is part of.
      const decision = admitUpgrade(req, guards, 0);
      const still = decision.admitted && (client.scope === 'read' || decision.scope !== 'read');
      if (still) continue;
      closed++;
      client.socket.close(1008, reason);
    }
    return closed;
  };

  return {
    clients,
    settingsChanged(options) {
      defaultErrorReplies = options.errorReplies ?? false;
      wss.options.maxPayload = guards.limits.maxWebSocketMessageBytes;
      return recheckAccess('access revoked by a configuration reload');
    },
    recheckAccess,
    async close() {
      clearInterval(heartbeat);
      unsubscribe();
      server.off('upgrade', onUpgrade);
      const gone = [...clients].map(
        (client) =>
          new Promise<void>((resolve) => {
            client.socket.once('close', () => resolve());
            client.socket.close(1001, 'iogate is shutting down');
          }),
      );
      const grace = setTimeout(() => {
        for (const client of clients) client.socket.terminate();
      }, CLOSE_GRACE_MS);
      await Promise.all(gone);
      clearTimeout(grace);
      wss.close();
    },
  };
}

function isWebSocketPath(url: string): boolean {
  try {
    const segments = pathSegments(url);
    return segments.length === 1 && segments[0] === 'ws';
  } catch {
    return false;
  }
}

/**
 * `/ws?errors=1` (or `true`, `yes`) asks for error replies, `errors=0` (`false`,
 * `no`) turns off what the configuration turned on; undefined when not said.
 */
function errorRepliesRequested(url: string): boolean | undefined {
  const query = url.indexOf('?');
  if (query < 0) return undefined;
  const value = new URLSearchParams(url.slice(query + 1)).get('errors');
  if (value === null) return undefined;
  return !['0', 'false', 'no', 'off'].includes(value.toLowerCase());
}
