import type { DeviceType } from '../../devices/device.js';
import { canonicalType } from '../../registry/type-names.js';

// Lists of type names as clients send them (WebSocket filters, webhook masks,
// bulk queries). Names are resolved to canonical types once, so matching a
// device is a set lookup on its type and `input` selects exactly what `di` does
// (EVOK compared the names with each device's `dev` text, so most never matched).

export interface ParsedTypes {
  types: Set<DeviceType>;
  /** Entries that are no type name, as given. */
  unknown: string[];
}

export function parseTypeNames(names: readonly unknown[]): ParsedTypes {
  const types = new Set<DeviceType>();
  const unknown: string[] = [];
  for (const name of names) {
    const type = typeof name === 'string' ? canonicalType(name) : undefined;
    if (type === undefined) unknown.push(typeof name === 'string' ? name : JSON.stringify(name));
    else types.add(type);
  }
  return { types, unknown };
}
