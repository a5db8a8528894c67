import { BlockList, isIP } from 'node:net';

// Modbus has no authentication: which clients may talk to the server is
// decided by their address alone. Entries are addresses or CIDR prefixes,
// IPv4 or IPv6; an IPv4 client reaching a dual-stack socket shows up as
// ::ffff:a.b.c.d and is matched as the IPv4 address it is.

export interface AllowList {
  allows(address: string | undefined): boolean;
}

/** A problem with one `allow` entry, or undefined when it is an address or CIDR prefix. */
export function allowEntryProblem(entry: string): string | undefined {
  const [address, prefix, ...rest] = entry.split('/');
  const family = isIP(address ?? '');
  if (family === 0 || rest.length > 0) return `'${entry}' is not an IP address or CIDR prefix (192.168.1.10, 10.0.0.0/24, fd00::/8)`;
  if (prefix === undefined) return undefined;
  const bits = Number(prefix);
  const max = family === 4 ? 32 : 128;
  if (!/^\d+$/.test(prefix) || bits > max) return `'${entry}': the prefix length must be 0..${max}`;
  return undefined;
}

/** Entries must have passed allowEntryProblem (the configuration reader checks them). */
export function allowList(entries: readonly string[]): AllowList {
  const list = new BlockList();
  for (const entry of entries) {
    const [address, prefix] = entry.split('/') as [string, string | undefined];
    const type = isIP(address) === 4 ? 'ipv4' : 'ipv6';
    if (prefix === undefined) list.addAddress(address, type);
    else list.addSubnet(address, Number(prefix), type);
  }
  return {
    allows(address) {
      if (address === undefined) return false;
      const v4 = address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
      const family = isIP(v4);
      if (family === 0) return false;
      return list.check(v4, family === 4 ? 'ipv4' : 'ipv6');
    },
  };
}
