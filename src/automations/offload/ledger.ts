import { join } from 'node:path';
import { readJsonState, writeJsonState } from '../../state/json-state.js';

// Which DirectSwitch bits iogate itself set, kept in the state directory, so
// that a later start or reload clears exactly those the config no longer asks
// for and tells them apart from bits someone else set (a client's REST `mode`
// write, a tool on the bus). See docs/adr/0002-firmware-offload.md.

export interface OffloadedBit {
  /** Board (Modbus slave) name, as the registry names it. */
  board: string;
  /** The board's enable mask register; the polarity and toggle masks are named with it. */
  direct_reg: number;
  polar_reg: number;
  toggle_reg: number;
  /** The input's bit in the three masks. */
  bit: number;
  /** For the log: the rule that asked for it. */
  rule: string;
}

export interface OffloadLedger {
  load(): Promise<OffloadedBit[]>;
  save(bits: readonly OffloadedBit[]): Promise<void>;
}

export const LEDGER_FILE = 'firmware-offload.json';

function isBit(value: unknown): value is OffloadedBit {
  if (typeof value !== 'object' || value === null) return false;
  const bit = value as Record<string, unknown>;
  return (
    typeof bit['board'] === 'string' &&
    ['direct_reg', 'polar_reg', 'toggle_reg', 'bit'].every((key) => Number.isInteger(bit[key])) &&
    typeof bit['rule'] === 'string'
  );
}

/** The ledger as a JSON file in `stateDir`; an unreadable file counts as empty and is reported through `warn`. */
export function fileLedger(stateDir: string, warn: (message: string) => void): OffloadLedger {
  const path = join(stateDir, LEDGER_FILE);
  return {
    async load() {
      const { data, warning } = readJsonState(path);
      if (warning) warn(warning);
      if (data === undefined) return [];
      const bits = (data as { bits?: unknown }).bits;
      if (!Array.isArray(bits)) {
        warn(`${path}: no "bits" list, ignored`);
        return [];
      }
      return bits.filter(isBit);
    },
    save(bits) {
      return writeJsonState(path, { bits });
    },
  };
}

/** The key naming one bit of one board's masks. */
export function bitKey(bit: Pick<OffloadedBit, 'board' | 'direct_reg' | 'bit'>): string {
  return `${bit.board}@${bit.direct_reg}:${bit.bit}`;
}
