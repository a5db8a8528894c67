import { createServer, type Server } from 'node:net';
import type { Dialer } from '../owserver/client.js';
import { serveOwConnection, type OwTree } from '../owserver/responder.js';
import { duplexPair } from '../transport/duplex-pair.js';

// Simulated 1-Wire devices behind a simulated owserver: DS18B20/DS18S20
// thermometers, DS2438 multisensors and DS2408/DS2413 PIO chips, each with a
// fixed address, whose readings drift slowly with time. The daemon reaches
// them through the real owserver protocol, over an in-memory stream (the
// built-in configuration) or a TCP port (iogate-sim --owserver).

const TYPE_BY_FAMILY: Readonly<Record<string, string>> = {
  '10': 'DS18S20',
  '28': 'DS18B20',
  '22': 'DS1822',
  '26': 'DS2438',
  '29': 'DS2408',
  '3A': 'DS2413',
  '12': 'DS2406',
};

export const SIMULATED_FAMILIES: readonly string[] = Object.keys(TYPE_BY_FAMILY);

interface SimulatedDevice {
  address: string;
  type: string;
  /** Phase of its drift, so devices differ. */
  phase: number;
  /** A reading pinned by a test instead of the drift. */
  pinned?: number;
}

/** Minutes per full swing of the drift. */
const DRIFT_PERIOD_MS = 10 * 60 * 1000;

export class SimulatedOneWire implements OwTree {
  private readonly devices = new Map<string, SimulatedDevice>();
  private readonly hidden = new Set<string>();

  /** `families`: hex family codes, one device each (as owserver's --fake). */
  constructor(
    families: readonly string[],
    /** Milliseconds of the drift's clock; tests pass their own. */
    private readonly clock: () => number = Date.now,
  ) {
    families.forEach((family, index) => {
      const code = family.toUpperCase().padStart(2, '0');
      const type = TYPE_BY_FAMILY[code];
      if (!type) throw new Error(`no simulated 1-Wire device for family ${family} (known: ${SIMULATED_FAMILIES.join(', ')})`);
      const address = simulatedAddress(code, index);
      this.devices.set(address, { address, type, phase: index * 1.7 });
    });
  }

  get addresses(): string[] {
    return [...this.devices.keys()];
  }

  /** A test's view: the device leaves the bus (false) or comes back (true). */
  setPresent(address: string, present: boolean): void {
    if (present) this.hidden.delete(address);
    else this.hidden.add(address);
  }

  /** Pin a thermometer's reading (undefined: drift again). */
  setTemperature(address: string, value: number | undefined): void {
    const device = this.devices.get(address);
    if (device) device.pinned = value;
  }

  list(path: string): string[] | undefined {
    const clean = path.replace(/\/+$/, '');
    if (clean === '' || clean === '/uncached') {
      return [...this.devices.keys()].filter((address) => !this.hidden.has(address)).map((address) => `/${address}`);
    }
    const device = this.present(clean.slice(1));
    return device ? propertiesOf(device.type).map((name) => `/${device.address}/${name}`) : undefined;
  }

  read(path: string): string | undefined {
    const match = /^\/(?:uncached\/)?([^/]+)\/(.+)$/.exec(path);
    if (!match) return undefined;
    const device = this.present(match[1]!);
    if (!device) return undefined;
    const property = match[2]!;
    if (property === 'type') return device.type;
    if (!propertiesOf(device.type).includes(property)) return undefined;
    if (property.endsWith('.ALL')) {
      const pattern = this.value(device, property);
      const channels = device.type === 'DS2408' ? 8 : 2;
      return Array.from({ length: channels }, (_, bit) => (pattern >> bit) & 1).join(',');
    }
    return formatted(this.value(device, property));
  }

  /** Devices can be addressed with or without dots and CRC, as owserver allows. */
  private present(name: string): SimulatedDevice | undefined {
    const compact = name.replace(/\./g, '').toUpperCase();
    for (const device of this.devices.values()) {
      if (this.hidden.has(device.address)) continue;
      const full = device.address.replace(/\./g, '');
      if (full === compact || full.slice(0, 14) === compact) return device;
    }
    return undefined;
  }

  private value(device: SimulatedDevice, property: string): number {
    const swing = Math.sin((2 * Math.PI * this.clock()) / DRIFT_PERIOD_MS + device.phase);
    const temperature = device.pinned ?? Math.round((21.5 + 1.5 * swing) * 16) / 16;
    switch (property) {
      case 'temperature':
        return temperature;
      case 'humidity':
      case 'HIH4000/humidity':
        return Math.round((45 + 5 * swing) * 1000) / 1000;
      case 'VDD':
        return 5.01;
      case 'VAD':
        return Math.round((2.2 + 0.1 * swing) * 100) / 100;
      case 'vis':
        return Math.round((0.0123 + 0.001 * swing) * 10000) / 10000;
      default:
        // PIO levels: a bit pattern that changes every minute.
        return Math.floor(this.clock() / 60_000 + device.phase) % 256;
    }
  }
}

function propertiesOf(type: string): string[] {
  switch (type) {
    case 'DS2438':
      return ['temperature', 'humidity', 'HIH4000/humidity', 'VDD', 'VAD', 'vis', 'type'];
    case 'DS2408':
      return ['sensed.ALL', 'PIO.ALL', 'type'];
    case 'DS2413':
    case 'DS2406':
      return ['sensed.ALL', 'PIO.ALL', 'type'];
    default:
      return ['temperature', 'type'];
  }
}

/** owserver right-aligns numbers in 12 characters. */
function formatted(value: number): string {
  return String(value).padStart(12, ' ');
}

/** A stable address for the index-th simulated device: family, six id bytes, CRC. */
function simulatedAddress(family: string, index: number): string {
  const id = [0x5a, 0x17, index & 0xff, (index >> 8) & 0xff, 0x00, 0x00];
  const bytes = [parseInt(family, 16), ...id];
  const hex = (byte: number) => byte.toString(16).toUpperCase().padStart(2, '0');
  return `${family}.${id.map(hex).join('')}.${hex(crc8(bytes))}`;
}

/** The 1-Wire ROM CRC (Dallas/Maxim CRC-8, polynomial x^8 + x^5 + x^4 + 1). */
export function crc8(bytes: readonly number[]): number {
  let crc = 0;
  for (const byte of bytes) {
    let value = byte;
    for (let bit = 0; bit < 8; bit++) {
      const mix = (crc ^ value) & 1;
      crc >>= 1;
      if (mix) crc ^= 0x8c;
      value >>= 1;
    }
  }
  return crc;
}

/** Connections to the simulated owserver over in-memory streams. */
export function simulatedDialer(tree: OwTree): Dialer {
  return () => {
    const [client, server] = duplexPair();
    serveOwConnection(server, tree);
    return client;
  };
}

/** The simulated owserver on a TCP port, for iogate-sim. */
export function owserverTcpServer(tree: OwTree): Server {
  return createServer((socket) => serveOwConnection(socket, tree));
}
