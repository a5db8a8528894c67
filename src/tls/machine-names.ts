// The names and addresses a self-signed certificate is made for: what a client
// on the network may type to reach this machine.
import { hostname, networkInterfaces } from 'node:os';

export function machineNames(): string[] {
  const host = hostname().toLowerCase();
  const names = new Set<string>(['localhost']);
  // A host name with characters a DNS name cannot hold would make an invalid dNSName; the addresses still serve.
  if (/^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/.test(host)) {
    names.add(host);
    if (!host.includes('.')) names.add(`${host}.local`);
  }
  for (const entries of Object.values(networkInterfaces())) {
    for (const entry of entries ?? []) {
      // IPv6 link-local addresses need a zone (%eth0) that a certificate cannot carry and a URL rarely does.
      if (entry.family === 'IPv6' && /^fe[89ab]/i.test(entry.address)) continue;
      names.add(entry.address.toLowerCase());
    }
  }
  return [...names];
}
