import type { Feature } from '../../boards/model.js';
import type { SlaveUnit } from '../../devices/slave/slave-unit.js';
import { circuitName } from '../../devices/build.js';
import { fileLedger } from './ledger.js';
import type { BoardPoint } from './plan.js';
import type { OffloadDeps } from './reconcile.js';

// The offload's dependencies made from the runtime's slaves: names resolve to
// a board, its map and a channel; registers are read and written through the
// slave, so they queue on the bus with the polls and count in its statistics.
//
// A rule names a device as `<type> <circuit>` (`di 1_01`, `ro 2_03`; a `/` or
// `:` may stand for the space), the type as the REST API spells it, or by an
// alias (`hall_button`, `ro/pump`), which `resolve` turns into the device's
// own type and circuit as the registry does for every other client.

const FEATURE_TYPES: Record<string, ReadonlyArray<Feature['type']>> = { di: ['DI'], input: ['DI'], do: ['DO'], ro: ['RO'], relay: ['RO'], output: ['DO', 'RO'] };

export interface SlaveOffloadOptions {
  slaves: Iterable<SlaveUnit>;
  stateDir: string;
  /** Why an output may not be handed to the firmware (an interlock, a cover's relay), from the control layer. */
  guard(output: string): string | undefined;
  log(level: 'info' | 'warn', message: string): void;
  /** A name as the registry resolves it (aliases included): the device's type and circuit, or undefined. */
  resolve?(name: string): { type: string; circuit: string } | undefined;
}

export function slaveOffloadDeps(options: SlaveOffloadOptions): OffloadDeps {
  const slaves = new Map([...options.slaves].map((slave) => [slave.name, slave]));
  const locate = (name: string): BoardPoint | undefined => {
    const match = /^(\w+)[\s/:]+(\S+)$/.exec(name.trim());
    const direct = match ? locateChannel(match[1]!, match[2]!) : undefined;
    if (direct) return direct;
    // Not a board's channel as written: an alias, alone or after the type.
    const resolved = options.resolve?.(match ? `${match[1]}/${match[2]}` : name.trim());
    return resolved && locateChannel(resolved.type, resolved.circuit);
  };
  const locateChannel = (typeName: string, circuit: string): BoardPoint | undefined => {
    const types = FEATURE_TYPES[typeName.toLowerCase()];
    if (!types) return undefined;
    const slave = slaves.get(circuit.slice(0, circuit.lastIndexOf('_')));
    if (!slave) return undefined;
    for (const feature of slave.model.features) {
      if (!types.includes(feature.type) || !('count' in feature)) continue;
      const start = 'start_index' in feature ? feature.start_index ?? 0 : 0;
      for (let index = 0; index < feature.count; index++) {
        if (circuitName(slave.name, index + 1 + start) === circuit) return { board: slave.name, model: slave.model, feature, index };
      }
    }
    return undefined;
  };
  return {
    locate,
    guard: options.guard,
    io(board) {
      const slave = slaves.get(board);
      return (
        slave && {
          read: async (address) => (await slave.readRegisters('holding', address, 1))[0]!,
          write: (address, value) => slave.writeRegister(address, value),
        }
      );
    },
    ledger: fileLedger(options.stateDir, (message) => options.log('warn', message)),
    log: options.log,
  };
}
