import { CORS_HEADERS, replyHeadersWith, type ReplyHeaders } from '../http/respond.js';

// Which web pages a browser lets talk to iogate. EVOK answers `*` to
// everyone; iogate keeps that for reads while there are no tokens and no list
// (nothing to steal) and otherwise names allowed origins one by one. Only a
// listed origin (or `*` written in the list) may write from another site or
// open a WebSocket, since neither a form POST nor an upgrade is held back by
// CORS in the browser.

export interface CorsPolicy {
  /** Reply headers for a request with this Origin header; undefined = EVOK's `*` (the reply default). */
  replyHeaders(origin: string | undefined): ReplyHeaders | undefined;
  /** Whether a browser page from this origin is listed: it may write and open a WebSocket from another site. */
  allowsOrigin(origin: string): boolean;
}

/** `openReads`: answer `*` to reads when nothing is listed (EVOK's answer while there are no tokens). */
export function createCorsPolicy(corsOrigins: readonly string[], openReads = false): CorsPolicy {
  if (corsOrigins.length === 0 && openReads) {
    return { replyHeaders: () => undefined, allowsOrigin: () => false };
  }
  if (corsOrigins.includes('*')) {
    return { replyHeaders: () => undefined, allowsOrigin: () => true };
  }
  // One ready header set per listed origin, so a request costs a map lookup.
  const allowed = new Map<string, ReplyHeaders>();
  for (const origin of corsOrigins) {
    const canonical = canonicalOrigin(origin);
    allowed.set(canonical, replyHeadersWith({ ...CORS_HEADERS, 'Access-Control-Allow-Origin': canonical, Vary: 'Origin' }));
  }
  // Vary even on refusals: a cache must not hand this answer to an allowed page.
  const refused = replyHeadersWith({ Vary: 'Origin' });
  return {
    replyHeaders: (origin) => (origin === undefined ? refused : allowed.get(canonicalOrigin(origin)) ?? refused),
    allowsOrigin: (origin) => allowed.has(canonicalOrigin(origin)),
  };
}

/** Browsers send `scheme://host[:port]` in lower case; configured values may differ in case or carry a trailing slash. */
function canonicalOrigin(origin: string): string {
  const trimmed = origin.trim().toLowerCase();
  return trimmed.endsWith('/') ? trimmed.slice(0, -1) : trimmed;
}
