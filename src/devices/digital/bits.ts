import type { RegisterCache } from '../slave/register-cache.js';

// Unipi boards pack up to 16 binary channels into one register; channel i of a
// feature is bit (i mod 16) of its value register.

export function bitOf(cache: RegisterCache, register: number, index: number): 0 | 1 | null {
  const word = cache.get('holding', register);
  return word === null ? null : ((word >> (index % 16)) & 1) as 0 | 1;
}

export function withBit(word: number, index: number, on: boolean): number {
  const mask = 1 << (index % 16);
  return on ? word | mask : word & ~mask & 0xffff;
}

/** Unsigned 32-bit value stored low word first (DI counters). */
export function uint32LowFirst(cache: RegisterCache, address: number): number | null {
  const words = cache.getRun('holding', address, 2);
  return words === null ? null : words[0]! + words[1]! * 65536;
}

const scratch = new DataView(new ArrayBuffer(4));

/** IEEE float32 from two registers; `lowFirst` when the first register holds the low word. */
export function float32(words: ArrayLike<number>, lowFirst: boolean): number {
  scratch.setUint16(0, lowFirst ? words[1]! : words[0]!);
  scratch.setUint16(2, lowFirst ? words[0]! : words[1]!);
  return scratch.getFloat32(0);
}

/** The two registers of a float32, in the same word order `float32` reads. */
export function float32Words(value: number, lowFirst: boolean): [number, number] {
  scratch.setFloat32(0, value);
  const high = scratch.getUint16(0);
  const low = scratch.getUint16(2);
  return lowFirst ? [low, high] : [high, low];
}

export function round(value: number, decimals: number): number {
  const factor = 10 ** decimals;
  return Math.round(value * factor) / factor;
}
