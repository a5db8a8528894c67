import type { IDisconnectPacket, MqttClient } from 'mqtt';

// Ending an mqtt.js client for good, which end() alone does not do. A client
// ended while it was still connecting (a reload restarts a component during
// the CONNECT) is revived by mqtt.js itself: with manualConnect, end() clears
// `disconnecting` once its stores are closed, and the stream's close that
// follows schedules a reconnect after reconnectPeriod. That client then
// connects with our client id (taking the new client's session over) and
// emits 'connect' with its stores closed: a QoS 1 publish from a 'connect'
// handler throws inside mqtt.js (Store.put on null) and ends the process. A
// CONNACK already read when end() ran is also handed out as 'connect' later.
// So a client being closed first loses its reconnect period and every
// listener of ours, and only then ends; a late event finds nobody to run.

/** How long a graceful end may wait for the broker (acknowledgements, the DISCONNECT written) before the socket is cut. */
export const CLOSE_BOUND_MS = 2000;

/** Events whose listeners are ours (mqtt.js's own 'close' bookkeeping stays). */
const DETACHED = ['connect', 'message', 'reconnect', 'offline', 'end', 'disconnect', 'packetsend', 'packetreceive', 'outgoingEmpty'] as const;

/** Stops every attempt and handler of `client` at once; errors from here on are swallowed (no listener would end the process). */
export function detachClient(client: MqttClient): void {
  client.options.reconnectPeriod = 0;
  for (const event of DETACHED) client.removeAllListeners(event);
  client.removeAllListeners('error');
  client.on('error', () => undefined);
}

/**
 * Detaches `client` and ends it: `graceful` sends a DISCONNECT (with
 * `disconnect`'s reason code and properties, MQTT 5) after what is in flight,
 * otherwise the socket is closed. Resolves when the client ended, at the
 * latest after `boundMs` (the socket is then destroyed).
 */
export function closeClient(
  client: MqttClient,
  { graceful, disconnect, boundMs = CLOSE_BOUND_MS }: { graceful: boolean; disconnect?: Partial<IDisconnectPacket>; boundMs?: number },
): Promise<void> {
  detachClient(client);
  return new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      // end() waits for in-flight QoS 1/2 acknowledgements that a dead broker never sends.
      client.stream?.destroy();
      resolve();
    }, boundMs);
    timer.unref();
    const done = () => {
      clearTimeout(timer);
      resolve();
    };
    const force = !graceful || !client.connected;
    if (disconnect !== undefined && !force) client.end(false, disconnect, done);
    else client.end(force, done);
  });
}
