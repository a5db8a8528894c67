import { counterTotalOf } from '../../devices/digital/di.js';
import type { Device } from '../../devices/device.js';
import type { SlaveUnit } from '../../devices/slave/slave-unit.js';
import type { Quality } from '../../devices/quality/point-meta.js';
import { EXCEPTION, ModbusPduError, type ModbusRequest, type ModbusResponse } from '../../modbus/pdu.js';

// iogate's own values at one unit id (`virtual_unit`), for masters that speak
// only Modbus: what no board holds (a counter's never-decreasing total, a
// cover's estimated position) or what only iogate knows (how fresh a board's
// values are). Read-only: holding and input registers answer the same map.
// The map (docs/modbus-server.md):
//   0..255          quality of the board at that unit id: 0 good, 1 stale,
//                   2 unknown, 3 offline; 0xFFFF no board there
//   1000 + 4 × n    counter_total of the n-th DI with a total (0-based, in
//                   the order the registry lists them: by board, then
//                   circuit), 64-bit big-endian over four registers;
//                   0xFFFF ×4 before a reading since start stands behind it
//   3000 + 2 × n    the n-th cover (in configuration order): position
//                   0..100 (0xFFFF unknown), then its motion: 0 stopped,
//                   1 up, 2 down, 3 unknown
// Addresses outside the map answer exception 02.

export const VIRTUAL_MAP = {
  qualityBase: 0,
  counterBase: 1000,
  counterSlots: 500,
  coverBase: 3000,
  coverSlots: 500,
} as const;

const QUALITY_CODE: Readonly<Record<Quality, number>> = { good: 0, stale: 1, unknown: 2, offline: 3 };
const MOTION_CODE: Readonly<Record<string, number>> = { stopped: 0, up: 1, down: 2, unknown: 3 };
const NONE = 0xffff;

export interface VirtualSources {
  slaves(): readonly SlaveUnit[];
  /** DIs that keep a counter_total, in a stable order. */
  counters(): readonly Device[];
  covers(): readonly Device[];
}

export function serveVirtual(request: ModbusRequest, sources: VirtualSources): ModbusResponse {
  if (request.fc !== 3 && request.fc !== 4) {
    throw new ModbusPduError(EXCEPTION.ILLEGAL_FUNCTION, `the virtual unit is read-only registers; function ${request.fc} is not served`);
  }
  const registers: number[] = [];
  // Quality ages run on the monotonic clock (point-meta.ts).
  const now = performance.now();
  for (let address = request.address; address < request.address + request.quantity; address++) {
    const value = register(address, sources, now);
    if (value === undefined) throw new ModbusPduError(EXCEPTION.ILLEGAL_DATA_ADDRESS, `virtual unit: address ${address} is not in the map`);
    registers.push(value);
  }
  return { fc: request.fc, registers };
}

function register(address: number, sources: VirtualSources, now: number): number | undefined {
  const { qualityBase, counterBase, counterSlots, coverBase, coverSlots } = VIRTUAL_MAP;
  if (address >= qualityBase && address < qualityBase + 256) {
    const slave = sources.slaves().find((candidate) => candidate.unit === address - qualityBase && Number(candidate.name) === candidate.unit);
    return slave ? QUALITY_CODE[slave.quality(now)] : NONE;
  }
  if (address >= counterBase && address < counterBase + 4 * counterSlots) {
    const counter = sources.counters()[Math.floor((address - counterBase) / 4)];
    if (!counter) return undefined;
    const total = counterTotalOf(counter);
    if (total === null || total === undefined) return NONE;
    // 64-bit big-endian: word 0 the highest. Totals stay below 2^53, so the number is exact.
    const word = (address - counterBase) % 4;
    return Number((BigInt(total) >> BigInt(16 * (3 - word))) & 0xffffn);
  }
  if (address >= coverBase && address < coverBase + 2 * coverSlots) {
    const cover = sources.covers()[Math.floor((address - coverBase) / 2)];
    if (!cover) return undefined;
    const state = cover.full() as { position?: number | null; moving?: string };
    if ((address - coverBase) % 2 === 0) return typeof state.position === 'number' ? state.position : NONE;
    return MOTION_CODE[state.moving ?? 'unknown'] ?? 3;
  }
  return undefined;
}
