import { isIP } from 'node:net';

// Loopback means "this machine only": the bind policy and the anonymous
// exemption for local clients both rest on this one definition.

/** A peer address as the socket reports it: 127.0.0.0/8, ::1, or 127.x mapped into IPv6. */
export function isLoopbackAddress(address: string | undefined): boolean {
  if (address === undefined) return false;
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : address;
  if (isIP(v4) === 4) return v4.startsWith('127.');
  return address === '::1';
}

/** A listen address from the configuration or command line; `localhost` resolves to loopback only. */
export function isLoopbackListenAddress(address: string): boolean {
  return address.toLowerCase() === 'localhost' || isLoopbackAddress(address);
}
