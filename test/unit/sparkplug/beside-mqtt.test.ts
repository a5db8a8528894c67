import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startMirrorAndEdge } from '../../helpers/sparkplug-gate.js';

// The edge node and the MQTT mirror at once, on one broker: an input change
// reaches both, and a write by either API shows in the other.

test('Sparkplug beside the MQTT mirror: one change, both see it; a DCMD shows on the mirror', async () => {
  const { gate, host, observer, stop } = await startMirrorAndEdge('both', ['plc1/event/#']);
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
    await stop();
  }
});
