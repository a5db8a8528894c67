import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { EdgeNode } from '../../../src/api/sparkplug/edge-node.js';
import { createLogger } from '../../../src/logging/log.js';
import { until } from '../../helpers/in-process.js';
import { BRAIN_DO, OutputTimeline } from '../../helpers/output-timeline.js';
import { startEdgeGate } from '../../helpers/sparkplug-gate.js';
import { TestBroker } from '../../helpers/mqtt-broker.js';
import { TahuHost } from '../../helpers/sparkplug-host.js';

// A DCMD left retained on the broker (published before the node connected) is
// stale: it is never carried out, even when it reaches a node already born.
// The broker grants the node's command subscription only once the node is
// born (by the primary host's STATE), so the retained DCMD arrives to a node
// that would accept a live one; the output is judged at the simulated board.

test('a retained DCMD published before the node connected is ignored; a live one after it is carried out', async () => {
  let node: EdgeNode | undefined;
  const broker = await TestBroker.start({
    beforeSubscribe: (topic) => (topic.includes('/DCMD/') ? until(() => node?.stats().born === true, 'the node to be born', 15_000) : Promise.resolve()),
  });
  const host = await TahuHost.connect(broker.url, 'plant', { hostId: 'scada' });
  await host.command('stale', '1', [{ name: 'do/1_01/value', type: 'Boolean', value: true }], { retain: true });
  const lines: string[] = [];
  const started = await startEdgeGate(broker.url, 'stale', { write: true, primaryHostId: 'scada', log: createLogger('WARNING', (line) => lines.push(line)) });
  node = started.node;
  const { gate } = started;
  const timeline = new OutputTimeline(gate.board, [BRAIN_DO(1), BRAIN_DO(2)]);
  try {
    await until(() => lines.some((line) => /retained command on spBv1\.0\/plant\/DCMD\/stale\/1 was ignored/.test(line)), 'the retained DCMD to be ignored', 10_000);
    // A live command after it goes through: the node took commands all along.
    await host.waitFor((m) => m.edgeNode === 'stale' && m.type === 'DBIRTH' && m.device === '1');
    const aliases = host.aliases('stale', '1');
    await host.command('stale', '1', [{ alias: aliases.get('do/1_02/value')!, type: 'Boolean', value: true }]);
    await until(() => timeline.isOn('do/1_02'), 'the live DCMD to switch do/1_02 on at the board', 10_000);
    assert.equal(timeline.samples.some(({ on }) => on[0]), false, 'the retained DCMD switched do/1_01 on');
    assert.equal(node.stats().commands.accepted, 1);
  } finally {
    timeline.stop();
    await node.stop();
    await gate.close();
    await host.close();
    await broker.stop();
  }
});
