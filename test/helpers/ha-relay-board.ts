import { writeMqttConfig } from './mqtt-gateway.js';
import { Mosquitto, type Subscriber } from './mosquitto.js';
import { relayBoardBusYaml, startRelayBoardSim } from './brain-relay-sim.js';
import type { SimProcess } from './sim-process.js';
import { spawnDaemon, type SpawnedDaemon } from './spawn-daemon.js';

// What the Home Assistant interop files run against: Eclipse Mosquitto, the
// built daemon with HA discovery on, and the relay board simulated in
// another process (its relays judged there, not through iogate).

export interface HaRelayBoard {
  mosquitto: Mosquitto;
  sim: SimProcess;
  daemon: SpawnedDaemon;
  /** Subscribed to every topic before the daemon started, so it saw the retained discovery too. */
  watcher: Subscriber;
  /** Ends the watcher, the daemon, the simulator and Mosquitto. */
  stop(): Promise<void>;
}

/** `top`: the config's sections under test (`covers:`, `automations:`); resolves once the daemon said `<clientId>/status` online. */
export async function startHaRelayBoard({ clientId, top }: { clientId: string; top: string }): Promise<HaRelayBoard> {
  const mosquitto = await Mosquitto.start();
  let sim: SimProcess | undefined;
  let daemon: SpawnedDaemon | undefined;
  let watcher: Subscriber | undefined;
  const stop = async () => {
    watcher?.close();
    await daemon?.stop();
    await sim?.stop();
    await mosquitto.stop();
  };
  try {
    sim = await startRelayBoardSim();
    watcher = mosquitto.subscribe('#');
    const file = writeMqttConfig({
      port: mosquitto.port,
      clientId,
      extra: '    homeassistant:\n      enabled: true',
      buses: relayBoardBusYaml(sim, { name: 'TCP', scanFrequency: 20 }),
      top,
    });
    daemon = await spawnDaemon(['--config', file]);
    await watcher.waitFor(`${clientId}/status`, (payload) => payload === 'online');
    return { mosquitto, sim, daemon, watcher, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
