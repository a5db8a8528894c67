import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AuthConfig } from '../../config/types.js';
import { RequestError } from '../../registry/request-error.js';
import { audit, auditRefusal } from '../../registry/audit-trail.js';
import type { Logger } from '../../logging/log.js';
import { parsePasswordHash, verifyPassword } from '../access/password-hash.js';
import { SESSION_COOKIE, sessionCookieOf, type SessionStore } from '../access/sessions.js';
import type { LoginThrottle } from '../access/login-throttle.js';
import type { Authorizer } from '../access/auth.js';
import { credentialsInClear } from '../access/clear-credentials.js';
import { parseFormBody, readBody } from './body.js';
import { sendError, sendSuccess } from './respond.js';

// `POST /auth/login`, `POST /auth/logout` and `GET /auth/session` (who the
// panel is logged in as). Writes from other sites never get here: the
// server's cross-site check runs first for every POST.

/** Logins checked at once; scrypt needs 32 MiB and a core's worth of time each. */
const MAX_LOGINS_IN_FLIGHT = 4;
const LOGIN_BODY_BYTES = 4096;

export interface AuthRouteContext {
  /** Read on every request: a reload replaces the users. */
  readonly authConfig: () => AuthConfig;
  readonly auth: Authorizer;
  readonly sessions: SessionStore;
  readonly throttle: LoginThrottle;
  readonly log?: Logger;
  /** Called after a logout, so WebSocket clients admitted with that session are closed too. */
  readonly sessionEnded?: () => void;
}

let loginsInFlight = 0;

export function handleAuthRoute(ctx: AuthRouteContext, segments: string[], req: IncomingMessage, res: ServerResponse, secure: boolean): void {
  const action = segments.length === 2 ? segments[1] : undefined;
  if (action === 'session') {
    if (req.method !== 'GET' && req.method !== 'HEAD') throw new RequestError(405, 'MethodNotAllowed', `${req.method} is not allowed here (GET, HEAD)`);
    const grant = ctx.auth.scopeOf(req);
    const users = ctx.authConfig().users.length > 0;
    if (grant.scope !== 'none' && grant.bySession) return sendSuccess(res, { user: grant.name, scope: grant.scope, users });
    return sendSuccess(res, { user: null, scope: grant.scope === 'none' ? null : grant.scope, users });
  }
  if (action !== 'login' && action !== 'logout') throw new RequestError(404, 'NotFound', `no such resource: ${req.url}`);
  if (req.method !== 'POST') throw new RequestError(405, 'MethodNotAllowed', `${req.method} is not allowed here (POST)`);
  if (action === 'logout') return logout(ctx, req, res, secure);
  void login(ctx, req, res, secure).catch((error: unknown) => sendError(res, error));
}

async function login(ctx: AuthRouteContext, req: IncomingMessage, res: ServerResponse, secure: boolean): Promise<void> {
  // A password over plain HTTP from another machine is refused like a token
  // (and before it is checked, so a guesser learns nothing either).
  const inClear = credentialsInClear(req, ctx.authConfig().allowInsecureTokens, 'a password');
  if (inClear !== undefined) throw inClear;
  const params = parseFormBody(req, await readBody(req, LOGIN_BODY_BYTES));
  const name = params['user'];
  const password = params['password'];
  if (typeof name !== 'string' || name === '' || typeof password !== 'string') {
    throw new RequestError(400, 'ValueError', "send 'user' and 'password' (form fields or a JSON object)");
  }
  const from = req.socket.remoteAddress ?? '';
  const actor = { who: name.slice(0, 64), from, interface: 'http' };
  const wait = ctx.throttle.waitMs(from, name);
  if (wait > 0) {
    // Not checked, so not counted as another failure; recorded at most ten a second like other refusals.
    auditRefusal(actor, 'auth/login', `refused: 429 too many failed logins, next attempt in ${Math.ceil(wait / 1000)} s`);
    res.setHeader('Retry-After', String(Math.ceil(wait / 1000)));
    throw new RequestError(429, 'TooManyRequests', `too many failed logins: try again in ${Math.ceil(wait / 1000)} s`);
  }
  if (loginsInFlight >= MAX_LOGINS_IN_FLIGHT) throw new RequestError(503, 'Busy', 'too many logins at once: try again in a moment');
  const user = ctx.authConfig().users.find((candidate) => candidate.name === name);
  loginsInFlight++;
  let ok: boolean;
  try {
    // An unknown name costs the same scrypt as a known one, so timing does not tell which names exist.
    const hash = parsePasswordHash(user?.passwordHash ?? DUMMY_HASH);
    ok = typeof hash !== 'string' && (await verifyPassword(password, hash)) && user !== undefined;
  } finally {
    loginsInFlight--;
  }
  // The users may have changed while scrypt ran (a reload): only the user as it is now may log in.
  const current = ctx.authConfig().users.find((candidate) => candidate.name === name);
  if (!ok || current === undefined || current.passwordHash !== user?.passwordHash) {
    ctx.throttle.failed(from, name);
    ctx.log?.warn(`login failed for user '${actor.who}' from ${from}`);
    // Every checked failure is kept: the throttle above already bounds how many there can be.
    audit(actor, 'auth/login', {}, 'refused: 401 wrong user name or password');
    throw new RequestError(401, 'Unauthorized', 'wrong user name or password');
  }
  ctx.throttle.succeeded(from, name);
  const id = ctx.sessions.create(current);
  const config = ctx.authConfig();
  res.setHeader('Set-Cookie', cookie(id, Math.floor(Math.min(config.sessionMaxMs, 400 * 86_400_000) / 1000), secure));
  ctx.log?.info(`user '${current.name}' logged in from ${from}`);
  audit(actor, 'auth/login', {}, 'ok');
  sendSuccess(res, { user: current.name, scope: current.scope });
}

function logout(ctx: AuthRouteContext, req: IncomingMessage, res: ServerResponse, secure: boolean): void {
  req.resume();
  const grant = ctx.auth.scopeOf(req);
  const id = sessionCookieOf(req.headers.cookie);
  const ended = id !== undefined && ctx.sessions.end(id);
  // Cleared either way, so a browser holding an ended session forgets it.
  res.setHeader('Set-Cookie', cookie('', 0, secure));
  if (ended) ctx.sessionEnded?.();
  if (ended) audit({ who: grant.scope !== 'none' && grant.name !== undefined ? grant.name : 'unknown', from: req.socket.remoteAddress ?? '', interface: 'http' }, 'auth/logout', {}, 'ok');
  sendSuccess(res, { loggedOut: ended });
}

/**
 * Secure only when the page came over TLS: browsers do not store a Secure
 * cookie set over plain http (except from localhost), which would make
 * logging in over plain HTTP impossible instead of merely unprotected.
 */
function cookie(value: string, maxAgeS: number, secure: boolean): string {
  return `${SESSION_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAgeS}${secure ? '; Secure' : ''}`;
}

/** A valid hash of no one's password, for names that are not users. */
const DUMMY_HASH = 'scrypt$32768$8$1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';
