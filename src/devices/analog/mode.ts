import type { AnalogMode } from '../../boards/model.js';
import { ValidationError } from '../fields.js';
import type { RegisterCache } from '../slave/register-cache.js';

// Mode selection shared by analog inputs and outputs: a board map lists the
// modes by name, and the selectable ones carry the value the mode register
// holds while that mode is active.

/**
 * The active mode's name. Without a mode register a channel with exactly one
 * mode is always in it; otherwise the register decides (null before it is read
 * or when it holds a value no mode claims).
 */
export function activeMode(modes: Readonly<Record<string, AnalogMode>>, register: number | null | undefined): string | null {
  const names = Object.keys(modes);
  if (register === undefined) return names.length === 1 ? names[0]! : null;
  if (register === null) return null;
  return names.find((name) => modes[name]!.value === register) ?? null;
}

/** Names that can be written to the mode register. */
export function selectableModes(modes: Readonly<Record<string, AnalogMode>>): string[] {
  return Object.keys(modes).filter((name) => modes[name]!.value !== undefined);
}

/**
 * Reject a mode write the channel cannot perform: without a mode register
 * only the current mode may be "written"; with one, any selectable mode.
 */
export function checkModeWrite(
  requested: unknown,
  channel: { modes: Readonly<Record<string, AnalogMode>>; mode_reg?: number },
  current: string | null,
  what: 'input' | 'output',
): void {
  if (typeof requested !== 'string' || requested === current) return;
  const selectable = channel.mode_reg === undefined ? [] : selectableModes(channel.modes);
  if (!selectable.includes(requested)) {
    throw new ValidationError(
      `mode: this ${what} cannot switch to '${requested}' (selectable: ${selectable.join(', ') || 'none'})`,
    );
  }
}

/** The active mode of channel `index`, read from its mode register when it has one. */
export function channelMode(
  channel: { modes: Readonly<Record<string, AnalogMode>>; mode_reg?: number },
  cache: RegisterCache,
  index: number,
): string | null {
  const { modes, mode_reg } = channel;
  return activeMode(modes, mode_reg === undefined ? undefined : cache.get('holding', mode_reg + index));
}

/**
 * A set point must lie in the range the channel advertises for the mode it is
 * written in (the mode written with it, or the active one): a value outside
 * would be clamped or, as a float32, become infinite, and still be answered
 * as a success.
 */
export function checkModeRange(
  value: number | undefined,
  modes: Readonly<Record<string, AnalogMode>>,
  mode: string | null | undefined,
): void {
  if (value === undefined || mode === null || mode === undefined) return;
  const range = modes[mode]?.range;
  if (range === undefined) return;
  const [min, max] = range;
  if (value < min || value > max) {
    throw new ValidationError(`value: ${value} is outside ${min}..${max}${modes[mode]!.unit ? ` ${modes[mode]!.unit}` : ''}, the range of mode ${mode}`);
  }
}
