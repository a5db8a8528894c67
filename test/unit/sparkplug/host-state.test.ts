import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { EdgeNode } from '../../../src/api/sparkplug/edge-node.js';
import { until } from '../../helpers/in-process.js';
import { startEdgeSession, type EdgeSession } from '../../helpers/sparkplug-gate.js';
import { TahuHost, type HostMessage } from '../../helpers/sparkplug-host.js';

// STATE gating with a primary host (aedes as the broker): the node births only
// once the host says online, ignores a STATE older than one it has seen (a
// stale retained one), and leaves (NDEATH) when the host goes offline.

const NODE = 'gated';
let session: EdgeSession;
let host: TahuHost;
let node: EdgeNode;

before(async () => {
  // The host's retained STATE says offline before the node connects.
  session = await startEdgeSession(NODE, { primaryHostId: 'scada' }, { hostId: 'scada', online: false });
  ({ host, node } = session);
});

after(async () => {
  await session?.stop();
});

const of = (type: string, from = 0) => (m: HostMessage) => m.edgeNode === NODE && m.type === type && m.index >= from;

test('no birth while the primary host is offline; its online STATE births the node', async () => {
  await until(() => node.stats().connected && node.stats().waitingForHost, 'the node to connect and wait for the host', 10_000);
  assert.equal(host.of(NODE).length, 0, 'nothing published before the host is online');
  await host.publishState(true);
  await host.waitFor(of('NBIRTH'), 10_000, 'NBIRTH after the online STATE');
  assert.equal(node.stats().born, true);
});

test('a STATE older than the last one seen (offline, a minute old) is ignored: the node stays born', async () => {
  const from = host.messages.length;
  await host.publishState(false, Date.now() - 60_000);
  // Sent after the stale STATE on the same connection: handled after it.
  await host.rebirth(NODE);
  await host.waitFor(of('NBIRTH', from), 5000, 'the NBIRTH of the rebirth asked for after the stale STATE');
  assert.equal(host.messages.some(of('NDEATH', from)), false, 'no NDEATH for a stale STATE');
  assert.equal(node.stats().born, true);
});

test('the primary host going offline makes the node leave with NDEATH, and its return births it again', async () => {
  const from = host.messages.length;
  const bdSeq = node.stats().bdSeq;
  await host.publishState(false, Date.now());
  const death = await host.waitFor(of('NDEATH', from), 5000, 'NDEATH after the offline STATE');
  assert.equal(death.metrics.find((m) => m.name === 'bdSeq')?.value, bdSeq);
  await until(() => node.stats().connected && node.stats().waitingForHost, 'the node to come back and wait for the host', 10_000);
  assert.equal(node.stats().born, false);
  await host.publishState(true, Date.now());
  await host.waitFor(of('NBIRTH', death.index), 10_000, 'NBIRTH after the host is back');
});
