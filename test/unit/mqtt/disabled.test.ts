import assert from 'node:assert/strict';
import { createServer, type AddressInfo } from 'node:net';
import { test } from 'node:test';
import { writeMqttConfig } from '../../helpers/mqtt-gateway.js';
import { spawnDaemon } from '../../helpers/spawn-daemon.js';

// With `apis.mqtt.enabled: false` nothing may try to reach the configured broker.

test('MQTT disabled: no connection attempt to the configured broker', async () => {
  let connections = 0;
  const listener = createServer((socket) => {
    connections++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const { port } = listener.address() as AddressInfo;
  const daemon = await spawnDaemon(['--config', writeMqttConfig({ port, clientId: 'off', enabled: false })]);
  try {
    assert.match(daemon.output(), /MQTT\s+off/);
    const response = await fetch(`${daemon.baseUrl}/rest/do/1_01`);
    assert.equal(response.status, 200, 'the other APIs serve');
    await new Promise((resolve) => setTimeout(resolve, 1500));
    assert.equal(connections, 0);
    assert.doesNotMatch(daemon.output(), /MQTT:/);
  } finally {
    assert.equal(await daemon.stop(), 0);
    listener.close();
  }
});

test('MQTT enabled with the broker unreachable: the daemon serves anyway', async () => {
  const listener = createServer();
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const { port } = listener.address() as AddressInfo;
  // The port was free a moment ago; closing it leaves a port where nothing listens.
  await new Promise<void>((resolve) => listener.close(() => resolve()));
  const daemon = await spawnDaemon(['--config', writeMqttConfig({ port, clientId: 'nobroker' })]);
  try {
    const response = await fetch(`${daemon.baseUrl}/rest/do/1_01`, { method: 'POST', body: new URLSearchParams({ value: '1' }) });
    assert.equal((await response.json()).result.value, 1);
  } finally {
    assert.equal(await daemon.stop(), 0, 'and stops cleanly');
  }
});
