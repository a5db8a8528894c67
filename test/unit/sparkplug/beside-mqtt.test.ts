import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startMqtt } from '../../../src/api/mqtt/bridge.js';
import { startSparkplug } from '../../../src/api/sparkplug/start.js';
import { createLogger } from '../../../src/logging/log.js';
import { STILL_BOARD, startGate } from '../../helpers/in-process.js';
import { TestBroker } from '../../helpers/mqtt-broker.js';
import { Observer } from '../../helpers/mqtt-observer.js';
import { TahuHost } from '../../helpers/sparkplug-host.js';

// The edge node and the MQTT mirror at once, on one broker: an input change
// reaches both, and a write by either API shows in the other.

test('Sparkplug beside the MQTT mirror: one change, both see it; a DCMD shows on the mirror', async () => {
  const broker = await TestBroker.start();
  const gate = await startGate(
    STILL_BOARD.replace(
      'apis:\n',
      `apis:
  mqtt:
    enabled: true
    address: 127.0.0.1
    port: ${broker.port}
    client-id: plc1
  sparkplug:
    enabled: true
    group_id: plant
    edge_node_id: both
    servers:
      - url: ${broker.url}
    write: true
`,
    ),
  );
  const log = createLogger('CRITICAL');
  const bridge = startMqtt({ ...gate.runtime, config: gate.config.apis.mqtt, log });
  const node = startSparkplug(gate.config, gate.runtime, log);
  const host = await TahuHost.connect(broker.url, 'plant');
  const observer = await Observer.connect(broker.url, ['plc1/event/#']);
  try {
    await host.waitFor((m) => m.type === 'DBIRTH' && m.device === '1');
    const aliases = host.aliases('both', '1');
    await observer.waitForJson('plc1/event/di/1_01', (body) => body.value === 0);
    gate.setInput(0, true);
    await observer.waitForJson('plc1/event/di/1_01', (body) => body.value === 1);
    await host.waitFor((m) => m.type === 'DDATA' && m.metrics.some((x) => x.alias === aliases.get('di/1_01/value') && x.value === true));

    await host.command('both', '1', [{ alias: aliases.get('do/1_03/value')!, type: 'Boolean', value: true }]);
    await observer.waitForJson('plc1/event/do/1_03', (body) => body.value === 1);
    await host.waitFor((m) => m.type === 'DDATA' && m.metrics.some((x) => x.alias === aliases.get('do/1_03/value') && x.value === true));
    assert.equal(gate.runtime.registry.find('do', '1_03')!.full()['value'], 1);
  } finally {
    await observer.close();
    await host.close();
    await node.stop();
    await bridge.stop();
    await gate.close();
    await broker.stop();
  }
});
