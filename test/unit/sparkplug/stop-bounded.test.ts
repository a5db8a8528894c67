import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { CLOSE_BOUND_MS } from '../../../src/api/mqtt/close-client.js';
import { BrokerFront } from '../../helpers/broker-front.js';

// A stop (SIGTERM, or a reload that restarts the edge node) waits for the
// broker to acknowledge the NDEATH, but not for ever: on a link that went
// silent the acknowledgement never comes, and a reload waiting for it would
// hold every later reload until the keep alive gave up (90 s here).

let front: BrokerFront | undefined;

after(async () => {
  await front?.stop();
});

test('stopping the edge node on a silent link ends within the close bound, not at the keep alive', { timeout: 30_000 }, async () => {
  const link = await BrokerFront.silenceable();
  front = link.front;
  const { node } = await front.startNode('mute1', { keepalive: 60 });
  await front.host.waitFor((m) => m.edgeNode === 'mute1' && m.type === 'DBIRTH', 10_000, 'the DBIRTH');
  link.silence();
  const started = performance.now();
  await node.stop();
  const took = performance.now() - started;
  assert.ok(took < CLOSE_BOUND_MS + 1000, `stopped in ${Math.round(took)} ms`);
  assert.equal(node.stats().connected, false);
});
