import type { BoardModel } from '../boards/model.js';
import type { BusConfig, Config } from '../config/types.js';
import { inputValueBlocks } from '../devices/slave/input-scan-loop.js';
import { ReadPlan } from '../devices/slave/read-plan.js';
import { RegisterCache } from '../devices/slave/register-cache.js';
import type { ModbusRequest } from '../modbus/pdu.js';

// What a configuration's scan schedules read, slave by slave: the requests of
// each scan of the repeating cycle (every block on its `frequency`-th scan, as
// in EVOK), the input reads of `input_scan_frequency`, and the rate of
// requests that makes. The runtime sums the rates (plannedPollRate, in the
// stats line), and `iogate --read-plan` prints the plan so a benchmark can
// make exactly the same reads without the daemon.

/** The reads of one slave's schedules (see ReadPlan): its scans' repeating cycle and its input reads. */
export interface SlaveReadPlan {
  name: string;
  /** Board model, as configured. */
  model: string;
  unit: number;
  /** Scan period in ms; 0: unthrottled or read once (no planned rate). */
  periodMs: number;
  /** The requests of scans 0, 1, … of the cycle, which then repeats. */
  scans: ModbusRequest[][];
  input?: { periodMs: number; blocks: number[]; requests: ModbusRequest[] };
}

export interface BusReadPlan {
  name: string;
  type: BusConfig['type'];
  /** Host and port of a Modbus TCP bus. */
  hostname?: string;
  port?: number | string;
  slaves: SlaveReadPlan[];
}

export function slaveReadPlan(model: BoardModel, device: BusConfig['devices'][number]): SlaveReadPlan {
  const scanned = device.scanEnabled && device.scanFrequency > 0;
  const plan: SlaveReadPlan = {
    name: device.name,
    model: device.model,
    unit: device.slaveId,
    periodMs: scanned ? 1000 / device.scanFrequency : 0,
    scans: scanned ? new ReadPlan(model.blocks).cycle() : [],
  };
  if (device.scanEnabled && device.inputScanFrequency > 0) {
    const blocks = inputValueBlocks(model, new RegisterCache(model.blocks));
    plan.input = {
      periodMs: 1000 / device.inputScanFrequency,
      blocks,
      requests: blocks.map((index) => ({ fc: model.blocks[index]!.type === 'input' ? 4 : 3, address: model.blocks[index]!.start_reg, quantity: model.blocks[index]!.count })),
    };
  }
  return plan;
}

/** Requests per second a slave's plan asks for. */
export function pollRateOf(plan: SlaveReadPlan): number {
  let rate = 0;
  if (plan.periodMs > 0) rate += ((1000 / plan.periodMs) * plan.scans.reduce((sum, scan) => sum + scan.length, 0)) / plan.scans.length;
  if (plan.input) rate += (1000 / plan.input.periodMs) * plan.input.requests.length;
  return rate;
}

/**
 * What a configuration's scans read, bus by bus (`iogate --read-plan`): the
 * daemon's own plan, so a benchmark can make exactly the same reads without the daemon.
 */
export function readPlanOf(config: Config, findModel: (name: string) => BoardModel | undefined): BusReadPlan[] {
  return config.buses.map((bus) => ({
    name: bus.name,
    type: bus.type,
    ...(bus.type === 'MODBUSTCP' ? { hostname: bus.hostname, port: bus.port } : bus.type === 'MODBUSRTU' ? { port: bus.port } : {}),
    slaves: bus.devices.flatMap((device) => {
      const model = findModel(device.model);
      return model ? [slaveReadPlan(model, device)] : [];
    }),
  }));
}
