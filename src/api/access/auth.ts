import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { AuthConfig } from '../../config/types.js';
import { RequestError } from '../../registry/request-error.js';
import { isLoopbackAddress } from './loopback.js';
import { credentialsInClear } from './clear-credentials.js';
import type { Actor } from '../../registry/audit-trail.js';
import { sessionCookieOf, type SessionStore } from './sessions.js';
import { sameOrigin } from './origin.js';

// Who may do what. Every interface (REST, JSON, bulk, RPC, WebSocket,
// metrics) asks the same Authorizer, so one client gets the same answer
// whichever door it uses.
//
// `read` covers everything that only looks (GETs, WebSocket subscriptions,
// RPC getters, bulk queries); `write` covers that plus everything that
// changes outputs or settings; `admin` covers `write` plus operating the
// daemon itself (`POST /config/reload`).

export type Scope = 'read' | 'write' | 'admin';

/** What a request may do; `none` carries the reason it was refused as a ready error. */
export type Grant =
  | { scope: Scope; byToken?: true; bySession?: true; /** The token's or the user's name, for the audit log. */ name?: string }
  | { scope: 'none'; error: RequestError };

/** Sent with every 401, as RFC 6750 asks, so clients know which scheme to use. */
export const CHALLENGE_HEADERS: Readonly<Record<string, string>> = { 'WWW-Authenticate': 'Bearer realm="iogate"' };

export interface Authorizer {
  /** False when no tokens and no users are configured: every request is granted `write`, as in EVOK. */
  readonly enabled: boolean;
  /** What the request's credentials (or lack of them) allow; decided once per request. */
  scopeOf(req: IncomingMessage, options?: { allowQueryToken?: boolean }): Grant;
  /** The error to answer, or undefined when the request may proceed. */
  authorize(req: IncomingMessage, need: Scope, options?: { allowQueryToken?: boolean }): RequestError | undefined;
}

interface KnownToken {
  name: string;
  scope: Scope;
  digest: Buffer;
}

/**
 * `originAllowed` tells whether a browser Origin header may use the API; the
 * loopback exemption is withheld from other origins, or any web page the
 * controller's own browser opens could switch outputs through it.
 */
export function createAuthorizer(config: AuthConfig, originAllowed: (origin: string) => boolean, sessions?: SessionStore): Authorizer {
  const OPEN: Grant = { scope: 'write' };
  if (config.tokens.length === 0 && config.users.length === 0) {
    return { enabled: false, scopeOf: () => OPEN, authorize: () => undefined };
  }
  // Hashing first gives equal-length buffers, which timingSafeEqual needs,
  // and keeps the token length out of the timing too.
  const known: KnownToken[] = config.tokens.map(({ name, scope, token }) => ({ name, scope, digest: digestOf(token) }));

  const anonymousGrant = (req: IncomingMessage): Grant => {
    if (config.allowAnonymous) return OPEN;
    const origin = req.headers.origin;
    if (config.loopbackAnonymous && isLoopbackAddress(req.socket.remoteAddress) && (origin === undefined || originAllowed(origin))) {
      return OPEN;
    }
    return { scope: 'none', error: unauthorized('this API needs a token (send "Authorization: Bearer <token>") or a login at the panel') };
  };

  // A panel login. The cookie is a browser's credential, so it counts only
  // on requests from the panel's own site: SameSite=Strict keeps browsers
  // from sending it cross-site, and this refuses it when another page (or a
  // script holding a stolen cookie) names another origin anyway, whatever
  // cors_origins lists.
  const sessionGrant = (req: IncomingMessage, id: string): Grant | undefined => {
    const times = { idleMs: config.sessionIdleMs, maxMs: config.sessionMaxMs };
    const user = sessions?.lookup(id, config.users, times);
    if (user === undefined) return undefined;
    const inClear = credentialsInClear(req, config.allowInsecureTokens, 'a session cookie');
    if (inClear !== undefined) return { scope: 'none', error: inClear };
    const origin = req.headers.origin;
    if (origin !== undefined && !sameOrigin(origin, req.headers.host)) {
      return { scope: 'none', error: new RequestError(403, 'Forbidden', `a panel login is accepted only from the panel's own site, not from ${origin}`) };
    }
    return { scope: user.scope, bySession: true, name: user.name };
  };

  const scopeOf = (req: IncomingMessage, options?: { allowQueryToken?: boolean }): Grant => {
    const presented = presentedToken(req, options?.allowQueryToken === true);
    if (presented === undefined) {
      const cookie = sessions === undefined ? undefined : sessionCookieOf(req.headers.cookie);
      // An unknown or ended session is no credential at all: the request is anonymous.
      return (cookie !== undefined ? sessionGrant(req, cookie) : undefined) ?? anonymousGrant(req);
    }
    if (presented === '') return { scope: 'none', error: unauthorized('malformed Authorization header: expected "Bearer <token>"') };
    const inClear = credentialsInClear(req, config.allowInsecureTokens);
    if (inClear !== undefined) return { scope: 'none', error: inClear };
    const digest = digestOf(presented);
    let match: KnownToken | undefined;
    // No early exit: every request costs the same whichever token (if any) matches.
    for (const token of known) {
      if (timingSafeEqual(token.digest, digest)) match = token;
    }
    if (match === undefined) return { scope: 'none', error: unauthorized('the token is not valid') };
    return { scope: match.scope, byToken: true, name: match.name };
  };

  return {
    enabled: true,
    scopeOf,
    authorize(req, need, options) {
      return checkScope(scopeOf(req, options), need);
    },
  };
}

/**
 * Checked again once a request's body has arrived, just before it is acted
 * on: its head was authorized when it came, but a reload may have revoked or
 * changed its token while the body was on its way (a slow client can take
 * the whole request timeout). `guards` is the live holder of the
 * authorizer, which a reload replaces, never a copy taken with the head.
 */
export function authorizeAgain(guards: { readonly auth?: Authorizer }, req: IncomingMessage, need: Scope): void {
  const refused = guards.auth?.authorize(req, need);
  if (refused) throw refused;
}

/** For interfaces that learn what they need only after reading the request (bulk items, RPC methods, WebSocket commands). */
export function checkScope(grant: Grant, need: Scope): RequestError | undefined {
  if (grant.scope === 'none') return grant.error;
  if (need === 'write' && grant.scope === 'read') {
    return new RequestError(403, 'Forbidden', grant.bySession ? 'this user may only read; writing needs a user with write scope' : 'this token may only read; writing needs a token with write scope');
  }
  if (need === 'admin' && grant.scope !== 'admin') {
    if (grant.bySession) return new RequestError(403, 'Forbidden', 'this needs a user with admin scope');
    return new RequestError(403, 'Forbidden', grant.byToken ? 'this needs a token with admin scope' : 'this needs a token with admin scope (without tokens configured: a client on this controller)');
  }
  return undefined;
}

function unauthorized(message: string): RequestError {
  return new RequestError(401, 'Unauthorized', message);
}

function digestOf(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/**
 * The bearer token, '' when credentials are present but malformed, undefined
 * when there are none. Browsers cannot set headers on a WebSocket upgrade,
 * hence the query parameter there (and only there: URLs end up in logs).
 */
function presentedToken(req: IncomingMessage, allowQueryToken: boolean): string | undefined {
  const header = req.headers.authorization;
  if (header !== undefined) {
    const match = /^Bearer[ ]+(\S+)[ ]*$/i.exec(header);
    return match ? match[1]! : '';
  }
  if (!allowQueryToken) return undefined;
  const url = req.url ?? '';
  const query = url.indexOf('?');
  if (query < 0) return undefined;
  const token = new URLSearchParams(url.slice(query + 1)).get('token');
  return token === null ? undefined : token;
}

/**
 * Who a request is, for the audit log: its token's or user's name, or `anonymous`.
 * The authorizer was consulted before this, so a refused request never gets here.
 */
export function requestActor(req: IncomingMessage, auth: Authorizer | undefined, iface: string, options?: { allowQueryToken?: boolean }): Actor {
  const grant = auth?.scopeOf(req, options);
  const who = grant !== undefined && grant.scope !== 'none' && grant.name !== undefined ? grant.name : 'anonymous';
  return { who, from: req.socket.remoteAddress ?? '', interface: iface };
}
