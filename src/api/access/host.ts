import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import { hostname, networkInterfaces } from 'node:os';
import { RequestError } from '../../registry/request-error.js';
import { isLoopbackAddress } from './loopback.js';
import { splitHost } from './origin.js';

// DNS rebinding: a page on attacker.example whose name is made to resolve to
// 127.0.0.1 (or to the controller) is "same origin" with iogate as far as the
// browser is concerned, but its requests still say `Host: attacker.example`.
// So only Host names that mean this machine are served: loopback names and
// addresses, the machine's hostname (and hostname.local), the addresses of its
// interfaces, and whatever `apis.allowed_hosts` adds (a reverse proxy's name).

/** How often, at most, a Host that is not known makes us look at the interfaces again (DHCP may move them). */
const INTERFACE_RESCAN_MS = 2000;

/** Distinct accepted Host headers remembered (they come from a handful of names and ports). */
const MAX_ACCEPTED_HOSTS = 64;

export type HostCheck = (req: IncomingMessage) => RequestError | undefined;

export function createHostCheck(allowedHosts: readonly string[]): HostCheck {
  if (allowedHosts.includes('*')) return () => undefined;
  const configured = new Set(allowedHosts.map((name) => bareName(name.trim().toLowerCase())));
  const machine = hostname().toLowerCase();
  const names = new Set(['localhost', machine, `${machine}.local`, ...configured]);
  let addresses = interfaceAddresses();
  let scannedAt = performance.now();

  const known = (name: string): boolean => {
    if (names.has(name) || name.endsWith('.localhost')) return true;
    if (isIP(name) === 0) return false;
    if (isLoopbackAddress(name) || addresses.has(name)) return true;
    const now = performance.now();
    if (now - scannedAt < INTERFACE_RESCAN_MS) return false;
    addresses = interfaceAddresses();
    scannedAt = now;
    return addresses.has(name);
  };

  /**
   * Host headers already accepted by name or as a loopback address, which
   * stays true for the process's life: a client sends the same Host on every
   * request, and parsing it each time was a visible part of a GET's cost
   * (bench: wrk on GET /rest/do/1_01). Interface addresses are not kept: they
   * may move.
   */
  const accepted = new Set<string>();
  const lasting = (name: string): boolean => names.has(name) || name.endsWith('.localhost') || isLoopbackAddress(name);

  return (req) => {
    const host = req.headers.host;
    // HTTP/1.0 clients may send none; a browser always does.
    if (host === undefined || accepted.has(host)) return undefined;
    const target = splitHost(host);
    const name = target === undefined ? undefined : bareName(target.name);
    if (name !== undefined && known(name)) {
      if (lasting(name)) {
        if (accepted.size >= MAX_ACCEPTED_HOSTS) accepted.clear();
        accepted.add(host);
      }
      return undefined;
    }
    return new RequestError(
      421,
      'MisdirectedRequest',
      `Host '${host.slice(0, 100)}' does not name this controller; add it to apis.allowed_hosts if a proxy or DNS name should reach iogate`,
    );
  };
}

/** IPv6 literals arrive in brackets; addresses are compared without them. */
function bareName(name: string): string {
  return name.startsWith('[') && name.endsWith(']') ? name.slice(1, -1) : name;
}

function interfaceAddresses(): Set<string> {
  const found = new Set<string>();
  for (const list of Object.values(networkInterfaces())) {
    for (const entry of list ?? []) {
      found.add(entry.address.toLowerCase());
      // Link-local IPv6 carries a zone; browsers send the address without it.
      const zone = entry.address.indexOf('%');
      if (zone >= 0) found.add(entry.address.slice(0, zone).toLowerCase());
    }
  }
  return found;
}
