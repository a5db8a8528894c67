import type { Feature, RegisterSpace } from '../boards/model.js';
import { AnalogInput } from './analog/ai.js';
import { AnalogOutput } from './analog/ao.js';
import { BrainAnalogOutput } from './analog/bao.js';
import { DataPoint } from './board/data-point.js';
import type { Device } from './device.js';
import type { CounterBook } from './digital/counter-book.js';
import { DigitalInput, type CounterTotalLink } from './digital/di.js';
import { DigitalOutput } from './digital/do.js';
import { UserLed } from './digital/led.js';
import { NvSave } from './board/nv-save.js';
import { OneWirePower } from './board/owpower.js';
import { RawRegister } from './board/register.js';
import { RelayOutput } from './digital/ro.js';
import type { SlaveUnit } from './slave/slave-unit.js';
import { Watchdog } from './board/watchdog.js';

// Turns a board model's features into API devices attached to their slave.

export interface BuildContext {
  /** Position of the slave in the configuration, shown as `glob_dev_id` by DI and DO. */
  globalId: number;
  log: (message: string) => void;
  /** Counter totals: where they are kept, and which DIs have one. */
  counters?: { book: CounterBook; wanted(circuit: string): boolean; log(message: string): void };
}

/** `<device name>_<NN>`: two digits at least, counting from 1 + start_index. */
export function circuitName(deviceName: string, number: number): string {
  return `${deviceName}_${String(number).padStart(2, '0')}`;
}

export function buildDevices(slave: SlaveUnit, context: BuildContext): Device[] {
  const devices: Device[] = [];
  for (const feature of slave.model.features) {
    const built = buildFeature(slave, feature, context);
    slave.channels.set(feature, built.map(({ device }) => device));
    for (const { device, registers } of built) {
      slave.attach(device, registers);
      devices.push(device);
    }
  }
  return devices;
}

type Built = Array<{ device: Device; registers: Array<{ space: RegisterSpace; address: number }> }>;

interface WithRegisters {
  registers(): Array<{ space: RegisterSpace; address: number }>;
}

function buildFeature(slave: SlaveUnit, feature: Feature, { globalId, log, counters }: BuildContext): Built {
  const built = <D extends Device & WithRegisters>(device: D) => ({ device, registers: device.registers() });
  /** Circuit of channel i; every numbered type honours start_index (EVOK only did for DI, EVOK#195). */
  const circuit = (i: number) => circuitName(slave.name, i + 1 + ('start_index' in feature ? feature.start_index ?? 0 : 0));
  switch (feature.type) {
    case 'DI':
      return range(feature.count).map((i) => built(new DigitalInput(circuit(i), slave, feature, i, globalId, totalFor(circuit(i), counters))));
    case 'DO': {
      const group: DigitalOutput[] = [];
      return range(feature.count).map((i) => {
        const device = new DigitalOutput(circuit(i), slave, feature, i, globalId, group, log);
        group.push(device);
        return built(device);
      });
    }
    case 'RO':
      return range(feature.count).map((i) => built(new RelayOutput(circuit(i), slave, feature, i)));
    case 'LED':
      return range(feature.count).map((i) => built(new UserLed(circuit(i), slave, feature, i)));
    case 'WD':
      return range(feature.count).map((i) => built(new Watchdog(circuit(i), slave, feature, i)));
    case 'AI':
      return range(feature.count).map((i) => built(new AnalogInput(circuit(i), slave, feature, i)));
    case 'AO':
      return range(feature.count).map((i) => built(new AnalogOutput(circuit(i), slave, feature, i)));
    case 'BAO':
      return range(feature.count).map((i) => built(new BrainAnalogOutput(circuit(i), slave, feature, i)));
    case 'REGISTER':
      return range(feature.count).map((i) => built(new RawRegister(slave, feature.reg_type ?? 'holding', feature.start_reg + i)));
    case 'DATA_POINT':
      return range(feature.count).map((i) => built(new DataPoint(slave, feature, i)));
    case 'OWPOWER':
      return [{ device: new OneWirePower(slave, feature.val_coil), registers: [] }];
    case 'NV_SAVE':
      return [{ device: new NvSave(slave, feature.val_coil), registers: [] }];
  }
}

function totalFor(circuit: string, counters: BuildContext['counters']): CounterTotalLink | undefined {
  if (!counters?.wanted(circuit)) return undefined;
  const { book } = counters;
  return { counter: book.open(circuit), changed: () => book.changed(), log: counters.log };
}

function range(count: number): number[] {
  return Array.from({ length: count }, (_, i) => i);
}
