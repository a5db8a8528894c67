import type { IncomingMessage } from 'node:http';
import { RequestError } from '../../registry/request-error.js';
import { isLoopbackAddress } from './loopback.js';

// A token (or a session cookie) that came over the network in plain HTTP has
// been readable by anyone on the way. Such a request is refused unless it came
// from this machine (a local client, or a TLS-terminating proxy on loopback),
// arrived over TLS (`apis.tls`), or `apis.auth.allow_insecure_tokens: true`
// accepts the risk. The refusal does not un-send the token: its message says
// to replace it, and to use HTTPS from then on.

/** The error to answer when credentials came in the clear from off this machine; undefined when they may be used. */
export function credentialsInClear(req: IncomingMessage, allowInsecure: boolean, what = 'a token'): RequestError | undefined {
  if (allowInsecure) return undefined;
  if ((req.socket as { encrypted?: boolean }).encrypted === true) return undefined;
  if (isLoopbackAddress(req.socket.remoteAddress)) return undefined;
  return new RequestError(
    403,
    'Forbidden',
    `${what} was sent over plain HTTP from another machine and is refused: anyone on the way could read it, so replace it; use HTTPS (apis.tls), or set apis.auth.allow_insecure_tokens: true to accept the risk`,
  );
}
