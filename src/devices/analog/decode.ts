import type { AnalogMode } from '../../boards/model.js';
import { round } from '../digital/bits.js';

// Decoding of 32-bit analog readings. Unipi firmware sends IEEE float32 with
// the low word in the first register; a mode may declare another layout (a
// `transformation`), which then applies while that mode is active.

type Transformation = NonNullable<AnalogMode['transformation']>;

const view = new DataView(new ArrayBuffer(4));

/**
 * The reading in `words` (two registers, as read) under `transformation`, or
 * null when it is not a finite number: JSON has no NaN, and EVOK's bare `NaN`
 * token broke strict parsers.
 */
export function decodeAnalog(words: ArrayLike<number>, transformation: Transformation = {}): number | null {
  const { datatype = 'float32', byteorder = 'big', wordorder = 'little', decimals = 3, ratio = 1 } = transformation;
  const [first, second] = [words[0]!, words[1]!];
  const [high, low] = wordorder === 'little' ? [second, first] : [first, second];
  view.setUint16(0, byteorder === 'little' ? swapBytes(high) : high);
  view.setUint16(2, byteorder === 'little' ? swapBytes(low) : low);
  const raw = datatype === 'int32' ? view.getInt32(0) : datatype === 'uint32' ? view.getUint32(0) : view.getFloat32(0);
  const value = round(raw * ratio, decimals);
  return Number.isFinite(value) ? value : null;
}

function swapBytes(word: number): number {
  return ((word & 0xff) << 8) | (word >> 8);
}
