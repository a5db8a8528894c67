import type { Config } from '../../config/types.js';
import { isLoopbackListenAddress } from './loopback.js';

// Refuses to put an unauthenticated API that switches relays on the network
// by accident. EVOK listens on all interfaces with no authentication at all;
// iogate does that only when told so in so many words.

/** A message explaining how to fix the configuration, or undefined when the listen address is acceptable. */
export function bindPolicyProblem(apis: Config['apis']): string | undefined {
  const { address, auth } = apis;
  if (isLoopbackListenAddress(address) || auth.tokens.length > 0 || auth.users.length > 0 || auth.allowAnonymous) return undefined;
  return [
    `refusing to listen on ${address} without access control: anyone on the network could switch outputs.`,
    'Either configure tokens (apis.auth.tokens: [{name: scada, token_file: /etc/iogate/scada.token, scope: write}])',
    'or panel users (apis.auth.users, hashes from iogate --hash-password),',
    'or set apis.auth.allow_anonymous: true to accept unauthenticated clients from the network as EVOK does,',
    'or listen on 127.0.0.1 (--address 127.0.0.1) and reach iogate through a reverse proxy or SSH tunnel.',
  ].join('\n  ');
}

/**
 * Modbus has no authentication at all: off loopback, the Modbus TCP server
 * serves only the clients its `allow` list names.
 */
export function modbusServerBindProblem(apis: Config['apis']): string | undefined {
  const { enabled, address, allow } = apis.modbusServer;
  if (!enabled || isLoopbackListenAddress(address) || allow.length > 0) return undefined;
  return [
    `apis.modbus_server: refusing to listen on ${address} without an allow list: Modbus has no authentication, anyone on the network could switch outputs.`,
    'List the clients that may connect (apis.modbus_server.allow: [10.0.0.5, 10.0.0.0/24]),',
    'or listen on 127.0.0.1 (apis.modbus_server.address: 127.0.0.1).',
  ].join('\n  ');
}
