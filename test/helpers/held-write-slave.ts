import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { serveRequest, type SlaveStore } from '../../src/modbus/slave.js';
import { MbapFramer, encodeMbap } from '../../src/modbus/tcp-framer.js';

// A Modbus TCP slave that answers reads at once but holds every write until
// the test releases it, so a test can act while a write is on the wire. Or,
// made with `hold: false`, one that answers every write at once except those
// it was told to swallow: carried out, but their reply never sent (the master
// times out on a write the board did apply).

const WRITE_CODES = new Set([5, 6, 15, 16]);

/** Every address of every space exists and starts at zero. */
class FlatStore implements SlaveStore {
  private readonly registers = new Uint16Array(65536);
  private readonly coils = new Uint8Array(65536);

  readRegisters(_space: 'holding' | 'input', address: number, quantity: number): number[] {
    return Array.from(this.registers.subarray(address, address + quantity));
  }
  readBits(_space: 'coil' | 'discrete', address: number, quantity: number): boolean[] {
    return Array.from(this.coils.subarray(address, address + quantity), (bit) => bit === 1);
  }
  writeRegisters(address: number, values: number[]): boolean {
    this.registers.set(values, address);
    return true;
  }
  writeCoils(address: number, values: boolean[]): boolean {
    this.coils.set(values.map(Number), address);
    return true;
  }
}

export interface HeldWriteSlave {
  port: number;
  /** Resolves when the first write request arrived (and is being held). */
  writeArrived: Promise<void>;
  /** Applies and answers the held writes, and every later one at once. */
  release(): void;
  /** The next write is carried out and its reply dropped. */
  swallowNextWrite(): void;
  close(): Promise<void>;
}

export async function startHeldWriteSlave({ store = new FlatStore(), hold = true }: { store?: SlaveStore; hold?: boolean } = {}): Promise<HeldWriteSlave> {
  let released = !hold;
  let swallow = 0;
  const held: Array<() => void> = [];
  let arrived!: () => void;
  const writeArrived = new Promise<void>((resolve) => (arrived = resolve));

  const server: Server = createServer((socket) => {
    socket.on('error', () => undefined);
    const framer = new MbapFramer((transactionId, unit, pdu) => {
      const answer = () => socket.write(encodeMbap(transactionId, unit, serveRequest(store, pdu)));
      if (!WRITE_CODES.has(pdu[0]!)) return answer();
      if (swallow > 0) {
        swallow--;
        serveRequest(store, pdu);
        return;
      }
      if (released) return answer();
      held.push(answer);
      arrived();
    });
    socket.on('data', (chunk) => framer.push(chunk));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    writeArrived,
    release() {
      released = true;
      for (const answer of held.splice(0)) answer();
    },
    swallowNextWrite() {
      swallow++;
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
