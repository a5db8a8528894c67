import type { AddressInfo } from 'node:net';
import type { ModbusServerConfig } from '../../config/types.js';
import { counterTotalOf } from '../../devices/digital/di.js';
import type { Device } from '../../devices/device.js';
import type { SlaveUnit } from '../../devices/slave/slave-unit.js';
import type { Logger } from '../../logging/log.js';
import type { ModbusBus } from '../../modbus/bus.js';
import type { Runtime } from '../../runtime/runtime.js';
import { allowList } from './allow-list.js';
import { BusShare } from './bus-share.js';
import { dispatch, type UnitRouter } from './dispatch.js';
import { modbusListener } from './listener.js';
import { SlaveGateway } from './slave-gateway.js';
import { newModbusServerStats, type ModbusServerStats } from './stats.js';
import { serveVirtual } from './virtual-unit.js';

// `apis.modbus_server`: iogate as the Modbus TCP gateway to its own buses,
// for masters that speak nothing else (SCADA, HMIs, Loxone, Mervis). The
// boards answer at the unit id of their name in comm_channels, iogate's own
// values at `virtual_unit`. See docs/modbus-server.md.

export interface ModbusServer {
  readonly port: number;
  readonly stats: ModbusServerStats;
  readonly connections: number;
  stop(): Promise<void>;
}

/** How long a request sent on to a board may wait for the line and its answer. */
const DEADLINE_MS = 5_000;

/** The unit id a configured device answers at: its name in comm_channels, when that is a number 1..255. */
export function unitIdOf(slave: SlaveUnit): number | undefined {
  const id = /^\d{1,3}$/.test(slave.name) ? Number(slave.name) : NaN;
  return id >= 1 && id <= 255 ? id : undefined;
}

export async function startModbusServer(config: ModbusServerConfig, runtime: Pick<Runtime, 'slaves' | 'control'>, log: Logger): Promise<ModbusServer> {
  const stats = newModbusServerStats();
  const shares = new WeakMap<ModbusBus, BusShare>();
  const gateways = new WeakMap<SlaveUnit, SlaveGateway>();
  const gatewayOf = (slave: SlaveUnit): SlaveGateway => {
    let gateway = gateways.get(slave);
    if (!gateway) {
      let share = shares.get(slave.bus);
      if (!share) shares.set(slave.bus, (share = new BusShare()));
      gateway = new SlaveGateway(slave, { maxAgeMs: config.maxAgeMs, write: config.write, control: runtime.control, stats, share, log, deadlineMs: DEADLINE_MS });
      gateways.set(slave, gateway);
    }
    return gateway;
  };
  const counters = (): Device[] => {
    const bySlave = [...runtime.slaves].filter((slave) => unitIdOf(slave) !== undefined).sort((a, b) => unitIdOf(a)! - unitIdOf(b)!);
    return bySlave.flatMap((slave) => slave.devices.filter((device) => counterTotalOf(device) !== undefined));
  };
  const router: UnitRouter = {
    // Read from the runtime each time: a reload rebuilds buses and slaves in place.
    gateway(unit) {
      const slave = runtime.slaves.find((candidate) => unitIdOf(candidate) === unit);
      return slave ? gatewayOf(slave) : undefined;
    },
    isVirtual: (unit) => unit === config.virtualUnit,
    serveVirtual: (request) => serveVirtual(request, { slaves: () => runtime.slaves, counters, covers: () => runtime.control.covers }),
  };
  const listener = modbusListener(
    (unit, pdu, client) => dispatch(unit, pdu, router, client, stats),
    config.allow.length > 0 ? allowList(config.allow) : undefined,
    stats,
    log,
    config.maxRequestsPerSecond,
  );
  await new Promise<void>((resolve, reject) => {
    listener.server.once('error', reject);
    listener.server.listen({ host: config.address, port: config.port }, () => {
      listener.server.off('error', reject);
      resolve();
    });
  });
  const port = (listener.server.address() as AddressInfo).port;
  log.info(`Modbus TCP server listening on ${config.address}:${port}${config.write ? '' : ' (read-only)'}`);
  return {
    port,
    stats,
    get connections() {
      return listener.connections;
    },
    stop: () => listener.close(),
  };
}
