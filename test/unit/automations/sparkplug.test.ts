import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { PointModel, metricValue } from '../../../src/api/sparkplug/point-model.js';
import { startGate, stillBoardYaml } from '../../helpers/in-process.js';
import { tempDir } from '../../helpers/temp-dir.js';

// Automations in the Sparkplug point model: one device `automations`, always
// online, with `enabled` (writable, as over REST), `offloaded` and `runs`.

test('Sparkplug: automations are one device with enabled, offloaded and runs per automation', async () => {
  const dir = tempDir('iogate-automation-spb-');
  const gate = await startGate(`alias_file: ${join(dir, 'alias.yaml')}\n${stillBoardYaml()}
automations:
  stair_light:
    when: {input: di/1_01, edge: rising}
    then: {output: do/1_01, on_for_s: 1}
`);
  try {
    const model = new PointModel(gate.runtime.slaves, [], gate.runtime.registry.list('automation'));
    const group = model.device('automations')!;
    assert.equal(group.online(), true);
    assert.deepEqual(group.points.map((point) => [point.name, point.writable]), [
      ['automation/stair_light/enabled', true],
      ['automation/stair_light/offloaded', false],
      ['automation/stair_light/runs', false],
    ]);
    assert.equal(metricValue(group.points[0]!), true);
    assert.equal(new PointModel(gate.runtime.slaves, []).device('automations'), undefined, 'no automations, no device');
  } finally {
    await gate.close();
  }
});
