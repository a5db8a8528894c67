import type { Config, LimitsConfig } from '../../config/types.js';
import { createAuthorizer, type Authorizer } from './auth.js';
import { createCorsPolicy, type CorsPolicy } from './cors.js';

// Everything the APIs consult before serving a client, built once from the
// configuration and handed to each interface (HTTP, WebSocket, metrics).

export interface ApiGuards {
  auth: Authorizer;
  cors: CorsPolicy;
  limits: LimitsConfig;
}

export function apiGuards(apis: Config['apis']): ApiGuards {
  const cors = createCorsPolicy(apis.auth.corsOrigins);
  return { auth: createAuthorizer(apis.auth, cors.allowsOrigin), cors, limits: apis.limits };
}
