import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { STATUS_CODES } from 'node:http';
import { RequestError } from '../../registry/request-error.js';
import { CHALLENGE_HEADERS, type Scope } from '../access/auth.js';
import type { ApiGuards } from '../access/guards.js';
import { crossSiteRefusal } from '../access/origin.js';
import { endWithReply } from '../http/final-reply.js';
import { errorBody } from '../http/respond.js';

// The checks a WebSocket upgrade passes before it becomes a connection:
// Host, browser origin, credentials, client count. Browsers do not apply CORS to
// WebSockets, so without the origin check any page open in a browser on the
// controller's network could drive the outputs through a loopback client.

export type UpgradeDecision = { admitted: true; scope: Scope } | { admitted: false; error: RequestError };

export function admitUpgrade(req: IncomingMessage, guards: ApiGuards, openClients: number): UpgradeDecision {
  const refused = guards.host(req) ?? crossSiteRefusal(req, guards.cors.allowsOrigin, 'open a WebSocket');
  if (refused) return { admitted: false, error: refused };
  // Browsers cannot set headers on an upgrade, hence the `?token=` fallback here.
  const grant = guards.auth.scopeOf(req, { allowQueryToken: true });
  if (grant.scope === 'none') return { admitted: false, error: grant.error };
  if (openClients >= guards.limits.maxWebSocketClients) {
    return { admitted: false, error: new RequestError(503, 'TooManyClients', `already ${openClients} WebSocket clients (apis.limits.max_websocket_clients)`) };
  }
  return { admitted: true, scope: grant.scope };
}

/** Answers a refused upgrade as plain HTTP with EVOK's error envelope, then closes the socket. */
export function refuseUpgrade(socket: Duplex, error: RequestError): void {
  const body = errorBody(error.kind, error.message);
  const headers = [
    `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status] ?? 'Error'}`,
    'Content-Type: application/json',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
    ...(error.status === 401 ? Object.entries(CHALLENGE_HEADERS).map(([name, value]) => `${name}: ${value}`) : []),
  ];
  endWithReply(socket, `${headers.join('\r\n')}\r\n\r\n${body}`);
}
