import type { Config } from '../../config/types.js';
import { isLoopbackListenAddress } from './loopback.js';

// Refuses to put an unauthenticated API that switches relays on the network
// by accident. EVOK listens on all interfaces with no authentication at all;
// iogate does that only when told so in so many words.

/** A message explaining how to fix the configuration, or undefined when the listen address is acceptable. */
export function bindPolicyProblem(apis: Config['apis']): string | undefined {
  const { address, auth } = apis;
  if (isLoopbackListenAddress(address) || auth.tokens.length > 0 || auth.allowAnonymous) return undefined;
  return [
    `refusing to listen on ${address} without access control: anyone on the network could switch outputs.`,
    'Either configure tokens (apis.auth.tokens: [{name: scada, token_file: /etc/iogate/scada.token, scope: write}]),',
    'or set apis.auth.allow_anonymous: true to accept unauthenticated clients from the network as EVOK does,',
    'or listen on 127.0.0.1 (--address 127.0.0.1) and reach iogate through a reverse proxy or SSH tunnel.',
  ].join('\n  ');
}
