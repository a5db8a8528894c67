import type { OneWireBusConfig } from '../config/types.js';
import { DeviceInfo } from '../devices/board/device-info.js';
import type { Device } from '../devices/device.js';
import type { Logger } from '../logging/log.js';
import { OwserverClient, tcpDialer } from '../owserver/client.js';
import type { ChangeFeed } from '../registry/feed.js';
import type { Registry } from '../registry/registry.js';
import { SimulatedOneWire, simulatedDialer } from '../sim/onewire.js';
import { OneWireBus } from './bus.js';
import { OneWireBusDevice } from './owbus-device.js';

// Builds the configured 1-Wire buses: an owserver client each (TCP, or an
// in-memory stream to simulated devices), the bus scheduler, its `owbus`
// device, and registration of the sensors it finds.

/** EVOK's owpower pulse for a bus reset: coil on for 200 ms, off, then 50 ms for the bus to settle. */
const POWER_ON_MS = 200;
const SETTLE_MS = 50;

export interface OneWireSetup {
  bus: OneWireBus;
  /** The simulated devices of a bus with `simulate:`. */
  simulation?: SimulatedOneWire;
}

/** What the 1-Wire assembly does with the registry; the runtime passes one that records each bus's devices. */
export type DeviceRegistration = Pick<Registry, 'add' | 'find' | 'invalidate'>;

export function buildOneWireBuses(
  configs: readonly OneWireBusConfig[],
  registry: DeviceRegistration,
  feed: ChangeFeed,
  log: Logger,
  /** Gives a newly found device its saved alias. */
  adoptAlias: (device: Device) => void,
): OneWireSetup[] {
  return configs.map((config) => {
    const simulation = config.simulate ? new SimulatedOneWire(config.simulate) : undefined;
    const client = new OwserverClient({
      dial: simulation ? simulatedDialer(simulation) : tcpDialer(config.hostname, config.port),
      timeoutMs: config.timeoutMs,
      where: simulation ? 'simulated' : `${config.hostname}:${config.port}`,
    });
    const bus = new OneWireBus({
      name: config.name,
      client,
      interval: config.interval,
      scanInterval: config.scanInterval,
      log,
      discovered: (sensor) => {
        registry.add(sensor);
        adoptAlias(sensor);
      },
      changed: (sensors) => {
        registry.invalidate();
        feed.publish(sensors);
      },
    });
    registry.add(new OneWireBusDevice(bus, config.type, powerCycler(config, registry, log)));
    if (config.deviceInfo) registry.add(new DeviceInfo(config.deviceInfo.model, config.deviceInfo));
    return simulation ? { bus, simulation } : { bus };
  });
}

/** `do_reset` through the board's `owpower` device named by the bus's `owpower:` key. */
function powerCycler(config: OneWireBusConfig, registry: DeviceRegistration, log: Logger): (() => Promise<void>) | undefined {
  if (config.owpower === undefined) return undefined;
  const owpower = registry.find('owpower', config.owpower);
  if (!owpower) {
    log.warn(`1-Wire bus ${config.name}: owpower '${config.owpower}' names no board with a 1-Wire power coil; do_reset is not available`);
    return undefined;
  }
  return async () => {
    await pulse(owpower, 1);
    await sleep(POWER_ON_MS);
    await pulse(owpower, 0);
    await sleep(SETTLE_MS);
  };
}

async function pulse(device: Device, value: 0 | 1): Promise<void> {
  try {
    await device.prepareWrite({ value })();
  } finally {
    device.settle();
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
