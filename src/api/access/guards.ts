import type { Config, LimitsConfig } from '../../config/types.js';
import { createAuthorizer, type Authorizer } from './auth.js';
import { createCorsPolicy, type CorsPolicy } from './cors.js';
import type { SessionStore } from './sessions.js';
import { createHostCheck, type HostCheck } from './host.js';

// Everything the APIs consult before serving a client, built once from the
// configuration and handed to each interface (HTTP, WebSocket, metrics).

export interface ApiGuards {
  auth: Authorizer;
  cors: CorsPolicy;
  limits: LimitsConfig;
  /** Refuses requests whose Host does not name this machine (DNS rebinding). */
  host: HostCheck;
}

/** `sessions`: the panel's logins, kept across reloads (a reload builds new guards around the same store). */
export function apiGuards(apis: Config['apis'], sessions?: SessionStore): ApiGuards {
  const cors = createCorsPolicy(apis.auth.corsOrigins, apis.auth.tokens.length === 0 && apis.auth.users.length === 0);
  return { auth: createAuthorizer(apis.auth, cors.allowsOrigin, sessions), cors, limits: apis.limits, host: createHostCheck(apis.allowedHosts) };
}
