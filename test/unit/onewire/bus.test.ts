import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createLogger } from '../../../src/logging/log.js';
import { OneWireBus } from '../../../src/onewire/bus.js';
import type { OneWireSensor } from '../../../src/onewire/sensor.js';
import { OwserverClient, tcpDialer } from '../../../src/owserver/client.js';
import { MESSAGE, MessageReader, encodeReply } from '../../../src/owserver/protocol.js';
import { SimulatedOneWire, simulatedDialer } from '../../../src/sim/onewire.js';
import { until } from '../../helpers/in-process.js';
import { TestOwserver } from '../../helpers/owserver.js';

// The bus scheduler on its own: bounds on what a bus may hold, and servers
// that only know the older DIR listing.

function busOn(client: OwserverClient, lines: string[]) {
  const found: OneWireSensor[] = [];
  const bus = new OneWireBus({
    name: 'OW',
    client,
    interval: 60,
    scanInterval: 300,
    log: createLogger('DEBUG', (line) => lines.push(line)),
    discovered: (sensor) => found.push(sensor),
    changed: () => undefined,
  });
  return { bus, found };
}

test('a bus that lists more than 500 devices keeps 500 and says so once', async () => {
  const devices = new SimulatedOneWire(Array.from({ length: 520 }, () => '28'));
  assert.equal(new Set(devices.addresses).size, 520);
  const lines: string[] = [];
  const { bus, found } = busOn(new OwserverClient({ dial: simulatedDialer(devices), timeoutMs: 1000, where: 'sim' }), lines);
  bus.start();
  try {
    await bus.firstScan;
    assert.equal(found.length, 500);
    await bus.scanNow();
    assert.equal(bus.sensors.size, 500);
    assert.equal(lines.filter((line) => line.includes('more than 500 devices')).length, 1);
  } finally {
    bus.stop();
  }
});

test('an owserver without DIRALL is listed with DIR', async () => {
  const owserver = await TestOwserver.start(['28', '26']);
  const tree = owserver.devices;
  let dirRequests = 0;
  owserver.behaviour = (socket) => {
    const reader = new MessageReader();
    socket.on('data', (chunk) => {
      const [request] = reader.push(chunk);
      if (!request) return;
      const path = request.payload.toString().replace(/\0.*$/s, '');
      if (request.typeOrRet === MESSAGE.DIRALL) {
        socket.end(encodeReply(-42, Buffer.alloc(0)));
      } else if (request.typeOrRet === MESSAGE.DIR) {
        dirRequests++;
        socket.end(Buffer.concat([...tree.list(path)!.map((entry) => encodeReply(0, Buffer.from(`${entry}\0`))), encodeReply(0, Buffer.alloc(0))]));
      } else {
        const text = tree.read(path);
        socket.end(text === undefined ? encodeReply(-1, Buffer.alloc(0)) : encodeReply(text.length, Buffer.from(text)));
      }
    });
  };
  const { bus } = busOn(new OwserverClient({ dial: tcpDialer('127.0.0.1', owserver.port), timeoutMs: 1000, where: owserver.where }), []);
  bus.start();
  try {
    await until(() => [...bus.sensors.values()].every((sensor) => sensor.time !== null) && bus.sensors.size === 2, 'both read');
    assert.ok(dirRequests >= 1);
    assert.deepEqual([...bus.sensors.values()].map((sensor) => sensor.full()['dev']), ['temp', '1wdevice']);
  } finally {
    bus.stop();
    await owserver.stop();
  }
});
