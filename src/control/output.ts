import type { Device } from '../devices/device.js';
import { CoilOutput } from '../devices/digital/coil-output.js';
import { DigitalOutput } from '../devices/digital/do.js';
import type { Registry } from '../registry/registry.js';

// The outputs the control layer switches (DO, RO, LED), how they are named in
// the config, and whether one is on as far as the daemon knows.

export type Output = DigitalOutput | CoilOutput;

export type OutputState = 'on' | 'off' | 'unknown';

export function isOutput(device: Device): device is Output {
  return device instanceof DigitalOutput || device instanceof CoilOutput;
}

/** `ro 1_03`: how messages name an output. */
export function label(device: Device): string {
  return `${device.type} ${device.circuit}`;
}

/** `ro/1_03`: how the config and the state file name it. */
export function reference(device: Device): string {
  return `${device.type}/${device.circuit}`;
}

/**
 * On means energised: `value` 1, or a DO running PWM with a duty above 0.
 * Unknown while its board is offline or before the first read.
 */
export function stateOf(device: Output): OutputState {
  if (device.unavailable() !== undefined) return 'unknown';
  const state = device.full();
  if (state['value'] === null || state['value'] === undefined) return 'unknown';
  if (state['value'] === 1) return 'on';
  const duty = state['pwm_duty'];
  return typeof duty === 'number' && duty > 0 ? 'on' : 'off';
}

/** `type/circuit` (`relay/1_03` too) or an alias; the problem as text when it names no output. */
export function resolveOutput(registry: Registry, name: string): Output | string {
  let device: Device | undefined;
  const slash = name.indexOf('/');
  try {
    device = slash > 0 ? registry.resolve(name.slice(0, slash), name.slice(slash + 1)) : registry.byAlias(name);
  } catch (error) {
    return `'${name}': ${(error as Error).message}`;
  }
  if (device === undefined) return `'${name}' is neither type/circuit (e.g. ro/1_01) nor a known alias`;
  if (!isOutput(device)) return `'${name}' is a ${device.type}; only do, ro and led outputs can be interlocked or drive a cover`;
  return device;
}
