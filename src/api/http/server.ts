import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net';
import { answerParseErrors } from './parse-errors.js';
import { RequestError } from '../../registry/request-error.js';
import type { Logger } from '../../logging/log.js';
import { CHALLENGE_HEADERS, type Scope } from '../access/auth.js';
import { admitConnections, type AdmissionStats } from './admission.js';
import { handleBulk } from './bulk.js';
import { handleDeviceRoute, type DeviceRouteContext } from './device-routes.js';
import type { ApiGuards } from '../access/guards.js';
import { crossSiteRefusal, isSafeMethod } from '../access/origin.js';
import { METRICS_CONTENT_TYPE, renderMetrics, type MetricsSource } from './metrics.js';
import type { WebhookStats } from '../webhook.js';
import { takingTurns } from './pipelining.js';
import { handleRpc } from '../rpc/endpoint.js';
import { sendError, sendRead, sendSuccess, useReplyHeaders } from './respond.js';
import { isLoopbackAddress } from '../access/loopback.js';
import { sendPanel, type ServedPanel } from '../panel/serve.js';
import type { TrendStore } from '../../trends/trend-store.js';
import { VERSION } from '../../lifecycle/version.js';
import { openApiDocument } from './openapi.js';
import { textEtag } from './etag.js';
import { auditRefusal, auditResult, type Actor } from '../../registry/audit-trail.js';
import { requestActor } from '../access/auth.js';
import { auditQuery, type AuditReader } from './audit-route.js';
import { handleAuthRoute, type AuthRouteContext } from './auth-routes.js';

// The HTTP front door. Routing splits the path once and switches on its first
// segment: no regular expressions on the request path.

const KEEP_ALIVE_TIMEOUT_MS = 5000;
/**
 * Connections the kernel completes and queues for us to accept. Under a
 * connection storm node's default (511) overflows, and every SYN dropped then
 * costs its client a one-second retransmit. The kernel caps this at
 * net.core.somaxconn (4096 by default since Linux 5.4).
 */
export const LISTEN_BACKLOG = 4096;

/**
 * The plain TCP listener that hands its connections to the HTTP server (the
 * service binds a new address before closing the old one with it). Nagle's
 * algorithm is off on every socket it accepts, as node:http's own servers
 * have it (their `noDelay` defaults to true, a net server's to false): with it
 * on, a reply written while an earlier one is still unacknowledged (pipelined
 * requests, a reply in more than one write) waits for the client's delayed
 * ACK, up to 40 ms on Linux.
 */
export function createHttpListener(onConnection: (socket: Socket) => void): NetServer {
  return createNetServer({ noDelay: true }, onConnection);
}

export interface HttpContext extends DeviceRouteContext, ApiGuards {
  version: string;
  /** Buses and slaves behind `GET /metrics`; without it the route is absent. */
  metrics?: MetricsSource;
  /** The outgoing webhook's state, shown in `/metrics` when it is enabled. */
  webhook?: WebhookStats;
  /** The control panel served at `/`; without it `/` is a 404, as in EVOK. */
  panel?: ServedPanel;
  /**
   * `POST /config/reload`: re-reads the configuration and applies the
   * difference; rejects with RequestError(400) listing the problems of an
   * invalid file (then nothing changed).
   */
  reloadConfig?: (actor: Actor) => Promise<unknown>;
  /** Where client socket errors are logged (at DEBUG); they are counted either way. */
  log?: Logger;
  /** The last hour of analog and 1-Wire values behind `GET /trends`; without it the route is absent. */
  trends?: TrendStore;
  /** The audit log behind `GET /audit` (admin); without it the route is absent. */
  auditLog?: AuditReader;
  /** Panel logins behind `/auth/*`; without them those routes are absent. */
  login?: Omit<AuthRouteContext, 'auth'>;
}

let openApiText: string | undefined;

export function createHttpServer(ctx: HttpContext): Server {
  const { limits } = ctx;
  const routeInTurn = takingTurns((req, res) => {
    try {
      route(ctx, req, res, admission);
    } catch (error) {
      if (error instanceof RequestError && (error.status === 401 || error.status === 403)) {
        auditRefusal(requestActor(req, ctx.auth, 'http'), pathOnly(req.url), auditResult(error));
      }
      sendError(res, error, error instanceof RequestError && error.status === 401 ? CHALLENGE_HEADERS : undefined);
    }
  });
  const server = createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      // The timeouts above are only enforced when this check runs.
      connectionsCheckingInterval: Math.min(1000, limits.headersTimeoutMs),
    },
    // The one 'request' listener. Admission's bookkeeping runs first, for every
    // request as it is parsed (a pipelined one that waits for its turn is busy
    // already), inside it rather than as a listener of its own (see Admission.requestStarted).
    (req, res) => {
      requestStarted(req, res);
      routeInTurn(req, res);
    },
  );
  // Not server.maxConnections: that turns the newest client away, however
  // well it behaves; admission lets the connections worth least go instead.
  // Requests (and so the handler above, which reads this) come only once the server listens.
  const { stats: admission, requestStarted } = admitConnections(server, limits, ctx.log);
  answerParseErrors(server);
  // An idle keep-alive connection holds one of maxConnections; free it soon.
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  return server;
}

function route(ctx: HttpContext, req: IncomingMessage, res: ServerResponse, admission: AdmissionStats | undefined): void {
  const corsHeaders = ctx.cors.replyHeaders(req.headers.origin);
  if (corsHeaders !== undefined) useReplyHeaders(res, corsHeaders);
  const misdirected = ctx.host(req);
  if (misdirected) throw misdirected;
  if (!isSafeMethod(req.method)) {
    const crossSite = crossSiteRefusal(req, ctx.cors.allowsOrigin, 'write');
    if (crossSite) throw crossSite;
  }
  const segments = pathSegments(req.url ?? '/');
  // The page holds no data and asks for a token itself, so it needs none.
  if (segments.length === 0 && ctx.panel) return sendPanel(ctx.panel, req, res);
  // Logging in needs no credentials; the cross-site check above already ran for its POSTs.
  if (segments[0] === 'auth' && ctx.login) return handleAuthRoute({ ...ctx.login, auth: ctx.auth }, segments, req, res, isEncrypted(req));
  // Preflights carry no credentials by design; they reveal nothing and change nothing.
  if (ctx.auth.enabled && req.method !== 'OPTIONS') {
    const refused = ctx.auth.authorize(req, routeScope(req.method, segments[0]));
    if (refused) throw refused;
  }
  switch (segments[0]) {
    case 'rest':
      handleDeviceRoute(ctx, 'form', segments, req, res);
      return;
    case 'json':
      handleDeviceRoute(ctx, 'json', segments, req, res);
      return;
    case 'bulk':
      if (segments.length !== 1) break;
      handleBulk(ctx, req, res);
      return;
    case 'rpc':
      if (segments.length !== 1) break;
      handleRpc(ctx, req, res);
      return;
    case 'version':
      if (segments.length !== 1) break;
      if (!isRead(req.method)) throw new RequestError(405, 'MethodNotAllowed', `${req.method} is not allowed here (GET, HEAD)`);
      sendRead(req, res, ctx.version, textEtag(ctx.version), 'text');
      return;
    case 'config':
      if (segments.length !== 2 || segments[1] !== 'reload' || !ctx.reloadConfig) break;
      serveReload(ctx, ctx.reloadConfig, req, res);
      return;
    case 'openapi.json':
      if (segments.length !== 1) break;
      if (!isRead(req.method)) throw new RequestError(405, 'MethodNotAllowed', `${req.method} is not allowed here (GET, HEAD)`);
      sendRead(req, res, (openApiText ??= JSON.stringify(openApiDocument(VERSION))));
      return;
    case 'trends':
      if (segments.length !== 1 || !ctx.trends) break;
      if (!isRead(req.method)) throw new RequestError(405, 'MethodNotAllowed', `${req.method} is not allowed here (GET, HEAD)`);
      sendRead(req, res, ctx.trends.json());
      return;
    case 'audit':
      if (segments.length !== 1 || !ctx.auditLog) break;
      serveAudit(ctx, ctx.auditLog, req, res);
      return;
    case 'metrics': {
      if (segments.length !== 1 || !ctx.metrics) break;
      if (!isRead(req.method)) throw new RequestError(405, 'MethodNotAllowed', `${req.method} is not allowed here (GET, HEAD)`);
      const body = renderMetrics({ ...ctx.metrics, http: admission, webhook: ctx.webhook });
      res.writeHead(200, { 'Content-Type': METRICS_CONTENT_TYPE, 'Content-Length': Buffer.byteLength(body) });
      res.end(body);
      return;
    }
  }
  throw new RequestError(404, 'NotFound', `no such resource: ${req.url}`);
}

/**
 * Only an admin token may reload; without tokens configured, a client on
 * this controller (as `systemctl reload` needs a shell on it too).
 */
function serveReload(ctx: HttpContext, reload: (actor: Actor) => Promise<unknown>, req: IncomingMessage, res: ServerResponse): void {
  if (req.method !== 'POST') throw new RequestError(405, 'MethodNotAllowed', `${req.method} is not allowed here (POST)`);
  if (ctx.auth.enabled) {
    const refused = ctx.auth.authorize(req, 'admin');
    if (refused) throw refused;
  } else if (!isLoopbackAddress(req.socket.remoteAddress)) {
    throw new RequestError(403, 'Forbidden', 'reloading the configuration needs a token with admin scope, or a client on this controller when no tokens are configured');
  }
  req.resume();
  reload(requestActor(req, ctx.auth, 'http')).then(
    (report) => sendSuccess(res, report),
    (error: unknown) => sendError(res, error),
  );
}

/** `GET /audit?since=<ts>&limit=<n>`: admin only; without tokens configured, a client on this controller. */
function serveAudit(ctx: HttpContext, auditLog: AuditReader, req: IncomingMessage, res: ServerResponse): void {
  if (!isRead(req.method)) throw new RequestError(405, 'MethodNotAllowed', `${req.method} is not allowed here (GET, HEAD)`);
  if (ctx.auth.enabled) {
    const refused = ctx.auth.authorize(req, 'admin');
    if (refused) throw refused;
  } else if (!isLoopbackAddress(req.socket.remoteAddress)) {
    throw new RequestError(403, 'Forbidden', 'the audit log needs a token with admin scope, or a client on this controller when no tokens are configured');
  }
  const { sinceMs, limit } = auditQuery(req.url ?? '/');
  auditLog.read(sinceMs, limit).then(
    (entries) => sendRead(req, res, JSON.stringify(entries)),
    (error: unknown) => sendError(res, error),
  );
}

/** True for a connection the TLS front wrapped (HTTPS, WSS). */
function isEncrypted(req: IncomingMessage): boolean {
  return (req.socket as { encrypted?: boolean }).encrypted === true;
}

function isRead(method: string | undefined): boolean {
  return method === 'GET' || method === 'HEAD';
}

/**
 * What a request needs before its handler runs. Bulk and RPC requests mix
 * reads and writes, so they need only `read` here and check each item
 * against the caller's grant (Authorizer.scopeOf) themselves.
 */
function routeScope(method: string | undefined, first: string | undefined): Scope {
  if (isRead(method)) return 'read';
  return first === 'bulk' || first === 'rpc' ? 'read' : 'write';
}

/** The request path without its query string: a query may carry a token, which the audit log must not keep. */
function pathOnly(url: string | undefined): string {
  const path = url ?? '/';
  const query = path.indexOf('?');
  return query < 0 ? path : path.slice(0, query);
}

/** Decoded path segments; one trailing slash is ignored, the query string too. */
export function pathSegments(url: string): string[] {
  const query = url.indexOf('?');
  const end = query < 0 ? url.length : query;
  // One trailing slash is ignored.
  const last = end > 1 && url.charCodeAt(end - 1) === SLASH ? end - 1 : end;
  const segments: string[] = [];
  if (end <= 1) return segments;
  // url[0] is the leading slash; each segment runs to the next one.
  for (let from = 1; ; ) {
    let to = url.indexOf('/', from);
    if (to < 0 || to > last) to = last;
    if (to === from) throw new RequestError(404, 'NotFound', `no such resource: ${url}`);
    const part = url.slice(from, to);
    try {
      segments.push(part.includes('%') ? decodeURIComponent(part) : part);
    } catch {
      throw new RequestError(400, 'BadRequest', `malformed percent-encoding in ${url}`);
    }
    if (to >= last) return segments;
    from = to + 1;
  }
}

const SLASH = 0x2f;
