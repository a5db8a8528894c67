import assert from 'node:assert/strict';
import { createServer, connect, type AddressInfo, type Socket } from 'node:net';
import { once } from 'node:events';
import { test } from 'node:test';
import { startMqtt } from '../../../src/api/mqtt/bridge.js';
import { CLOSE_BOUND_MS } from '../../../src/api/mqtt/close-client.js';
import { createLogger } from '../../../src/logging/log.js';
import { STILL_BOARD, startGate } from '../../helpers/in-process.js';
import { TestBroker } from '../../helpers/mqtt-broker.js';
import { Observer } from '../../helpers/mqtt-observer.js';

// Stopping the bridge (SIGTERM, or a reload that restarts it) publishes
// 'offline' and disconnects; at QoS 1 that waits for the broker's
// acknowledgement, but not for ever: on a link gone silent it never comes,
// and a reload waiting for it would hold every later reload. The silent link
// is a TCP relay in front of a real broker (aedes) that stops relaying.

test('stopping the MQTT bridge on a silent link ends within the close bound', { timeout: 30_000 }, async () => {
  const broker = await TestBroker.start();
  let silent = false;
  const sockets = new Set<Socket>();
  const relay = createServer((client) => {
    const upstream = connect(broker.port, '127.0.0.1');
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => undefined);
    }
    client.on('data', (data) => silent || upstream.write(data));
    upstream.on('data', (data) => silent || client.write(data));
    client.once('close', () => upstream.destroy());
    upstream.once('close', () => client.destroy());
  });
  relay.listen(0, '127.0.0.1');
  await once(relay, 'listening');
  const relayPort = (relay.address() as AddressInfo).port;
  const gate = await startGate(
    STILL_BOARD.replace('apis:\n', `apis:\n  mqtt:\n    enabled: true\n    address: 127.0.0.1\n    port: ${relayPort}\n    client-id: mute\n    protocol: '3.1.1'\n    qos: 1\n    keepalive: 60\n`),
  );
  const observer = await Observer.connect(broker.url, ['mute/status']);
  const bridge = startMqtt({ ...gate.runtime, config: gate.config.apis.mqtt, log: createLogger('CRITICAL') });
  try {
    await observer.waitFor('mute/status', (text) => text === 'online');
    silent = true;
    const started = performance.now();
    await bridge.stop();
    const took = performance.now() - started;
    assert.ok(took < CLOSE_BOUND_MS + 1000, `stopped in ${Math.round(took)} ms`);
  } finally {
    await observer.client.endAsync();
    await gate.close();
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => relay.close(() => resolve()));
    await broker.stop();
  }
});
