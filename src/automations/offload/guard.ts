import type { CoverConfig, InterlockConfig } from '../../config/types.js';
import type { Device } from '../../devices/device.js';
import { resolveOutput } from '../../control/output.js';
import type { Registry } from '../../registry/registry.js';

// Which outputs must not be handed to DirectSwitch: the firmware would switch
// them past the control layer — an interlock group's dwell and exclusion, a
// cover's direction lock and travel timing. Made from the same config the
// control layer reads, resolved through the registry the same way (type/circuit
// or alias), so a rule naming an output either way is caught.

export function controlGuard(registry: Registry, interlocks: readonly InterlockConfig[], covers: readonly CoverConfig[]): (output: string) => string | undefined {
  const reasons = new Map<Device, string>();
  const note = (name: string, reason: string) => {
    const device = resolveOutput(registry, name);
    if (typeof device !== 'string' && !reasons.has(device)) reasons.set(device, reason);
  };
  interlocks.forEach((config, index) => {
    for (const name of config.outputs) note(name, `is in interlock group ${index + 1} (${config.outputs.join(', ')})`);
  });
  for (const cover of covers) {
    note(cover.up, `is cover ${cover.name}'s up relay`);
    note(cover.down, `is cover ${cover.name}'s down relay`);
  }
  return (output) => {
    // A rule names its devices `type circuit`; the config `type/circuit` or by alias.
    const device = resolveOutput(registry, output.trim().replace(/^(\w+)[\s:]+/, '$1/'));
    return typeof device === 'string' ? undefined : reasons.get(device);
  };
}
