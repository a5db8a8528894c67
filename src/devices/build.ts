import type { Feature } from '../boards/model.js';
import type { Device } from './device.js';
import { DigitalInput } from './di.js';
import { DigitalOutput } from './do.js';
import type { SlaveUnit } from './slave-unit.js';

// Turns a board model's features into API devices attached to their slave.

export interface BuildContext {
  /** Position of the slave in the configuration, shown as `glob_dev_id`. */
  globalId: number;
  log: (message: string) => void;
}

/** `<device name>_<NN>`: two digits at least, counting from 1 + start_index. */
export function circuitName(deviceName: string, number: number): string {
  return `${deviceName}_${String(number).padStart(2, '0')}`;
}

export function buildDevices(slave: SlaveUnit, context: BuildContext): { devices: Device[]; warnings: string[] } {
  const warnings: string[] = [];
  const devices: Device[] = [];
  for (const feature of slave.model.features) {
    const built = buildFeature(slave, feature, context);
    if (built === undefined) {
      warnings.push(`model ${slave.model.name}: feature ${feature.type} is not supported yet`);
      continue;
    }
    for (const { device, registers } of built) {
      slave.attach(device, registers);
      devices.push(device);
    }
  }
  return { devices, warnings };
}

type Built = Array<{ device: Device; registers: Array<{ space: 'holding' | 'input'; address: number }> }>;

function buildFeature(slave: SlaveUnit, feature: Feature, { globalId, log }: BuildContext): Built | undefined {
  const name = slave.name;
  switch (feature.type) {
    case 'DI':
      return range(feature.count).map((i) => {
        const device = new DigitalInput(circuitName(name, i + 1 + (feature.start_index ?? 0)), slave, feature, i, globalId);
        return { device, registers: device.registers() };
      });
    case 'DO': {
      const group: DigitalOutput[] = [];
      return range(feature.count).map((i) => {
        const circuit = circuitName(name, i + 1 + (feature.start_index ?? 0));
        const device = new DigitalOutput(circuit, slave, feature, i, globalId, group, log);
        group.push(device);
        return { device, registers: device.registers() };
      });
    }
    default:
      return undefined;
  }
}

function range(count: number): number[] {
  return Array.from({ length: count }, (_, i) => i);
}
