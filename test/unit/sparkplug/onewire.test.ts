import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startSparkplug } from '../../../src/api/sparkplug/start.js';
import { createLogger } from '../../../src/logging/log.js';
import { STILL_BOARD, startGate } from '../../helpers/in-process.js';
import { TestBroker } from '../../helpers/mqtt-broker.js';
import { TestOwserver } from '../../helpers/owserver.js';
import { TahuHost } from '../../helpers/sparkplug-host.js';

// A 1-Wire bus is a Sparkplug device: born with its sensors' metrics, dead
// (DDEATH) while its owserver is gone, born again when it returns.

test('a 1-Wire bus: DBIRTH with its sensors, DDEATH while owserver is stopped, DBIRTH when it is back', async () => {
  const broker = await TestBroker.start();
  const owserver = await TestOwserver.start(['28', '26']);
  const gate = await startGate(
    STILL_BOARD.replace('apis:\n', `apis:\n  sparkplug:\n    enabled: true\n    group_id: plant\n    edge_node_id: ow\n    servers:\n      - url: ${broker.url}\n`) +
      `  OWBUS:\n    type: OWFS\n    hostname: 127.0.0.1\n    port: ${owserver.port}\n    timeout: 300\n    interval: 1\n    scan_interval: 1\n`,
  );
  const bus = gate.runtime.oneWire[0]!.bus;
  const node = startSparkplug(gate.config, gate.runtime, createLogger('CRITICAL'));
  const host = await TahuHost.connect(broker.url, 'plant');
  try {
    const birthWithSensors = await host.waitFor((m) => m.type === 'DBIRTH' && m.device === 'OWBUS' && m.metrics.some((x) => x.name?.startsWith('1wdevice/')), 15_000, 'DBIRTH of OWBUS with both sensors');
    const names = birthWithSensors.metrics.map((metric) => metric.name!);
    assert.ok(names.some((name) => /^temp\/28[0-9A-F]+\/value$/.test(name)), names.join());
    assert.ok(names.includes(`1wdevice/${[...bus.sensors.values()].find((s) => s.chip === 'DS2438')!.circuit}/humidity`));
    const from = host.messages.length;
    await owserver.stop();
    const death = await host.waitFor((m) => m.type === 'DDEATH' && m.device === 'OWBUS' && m.index >= from, 15_000, 'DDEATH of OWBUS');
    await owserver.listen();
    const again = await host.waitFor((m) => m.type === 'DBIRTH' && m.device === 'OWBUS' && m.index > death.index, 15_000, 'DBIRTH of OWBUS again');
    assert.ok(again.metrics.length >= birthWithSensors.metrics.length);
    assert.deepEqual(host.seqGaps('ow'), []);
  } finally {
    await node.stop();
    await host.close();
    await gate.close();
    await owserver.stop();
    await broker.stop();
  }
});
