import type { BoardModel } from '../boards/model.js';
import type { BusConfig } from '../config/types.js';
import { rtuResponder } from '../sim/rtu-responder.js';
import { Simulation } from '../sim/simulation.js';
import type { Link } from './link.js';
import { MemoryLink } from './memory-link.js';
import { SerialLink } from './serial-link.js';
import { TcpLink } from './tcp-link.js';

// The link for a configured bus. A SIMULATOR bus gets an in-memory RTU line
// with simulated boards on its far end, so it exercises the same frames as a
// serial line.

export function createLink(
  bus: BusConfig,
  models: ReadonlyMap<string, BoardModel>,
): { link: Link; simulation?: Simulation } {
  switch (bus.type) {
    case 'MODBUSTCP':
      return { link: new TcpLink(bus.hostname, bus.port) };
    case 'SIMULATOR': {
      const link = new MemoryLink(`simulator:${bus.name}`);
      const slaves = bus.devices.flatMap((device) => {
        const model = models.get(device.name);
        return model ? [{ unit: device.slaveId, model }] : [];
      });
      const simulation = new Simulation(slaves, bus.toggleMs);
      link.slaveEnd.onData(rtuResponder(simulation.boards, (frame) => link.slaveEnd.write(frame)));
      return { link, simulation };
    }
    case 'MODBUSRTU':
      return { link: new SerialLink({ path: bus.port, baudrate: bus.baudrate, parity: bus.parity, stopbits: bus.stopbits }) };
  }
}
