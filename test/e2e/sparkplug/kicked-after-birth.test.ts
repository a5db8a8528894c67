import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createLogger } from '../../../src/logging/log.js';
import { until } from '../../helpers/in-process.js';
import { TestBroker } from '../../helpers/mqtt-broker.js';
import { startEdgeGate } from '../../helpers/sparkplug-gate.js';
import { TahuHost } from '../../helpers/sparkplug-host.js';

// A broker whose ACL denies the node's NBIRTH and which closes the
// connection of a client whose publish it denies (aedes does; EMQX can be set
// to): the node is dropped right after each birth. That is a failing
// server, not a session: it is logged and counted, the node walks on, and
// with no other server it tries again with growing delays, not four times a
// second.

const deniesBirths = (topic: string) => topic.includes('/NBIRTH/');

test('dropped right after its birth: logged, counted, and the node walks on to a server that keeps it', async () => {
  const strict = await TestBroker.start({ denyPublish: deniesBirths });
  const good = await TestBroker.start();
  const host = await TahuHost.connect(good.url, 'plant');
  const lines: string[] = [];
  const { gate, node } = await startEdgeGate(strict.url, 'kicked1', { moreServers: [good.url], log: createLogger('DEBUG', (line) => lines.push(line)) });
  try {
    await host.waitFor((m) => m.edgeNode === 'kicked1' && m.type === 'NBIRTH', 10_000, 'NBIRTH on the second server');
    const line = lines.find((text) => text.includes('[dropped_after_birth]'));
    assert.ok(line, lines.join('\n'));
    assert.match(line, new RegExp(`^WARNING Sparkplug: ${strict.url}: the broker closed the session right after the birth .*ms after our birth; changes are kept; trying the next server`));
    assert.equal(node.stats().connectFailures.dropped_after_birth, 1);
    // It stays where it is kept.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    assert.equal(node.stats().server, good.url);
    assert.equal(strict.logins.length, 1);
  } finally {
    await node.stop();
    await gate.close();
    await host.close();
    await good.stop();
    await strict.stop();
  }
});

test('a lone server that drops every birth is tried again with growing delays', async () => {
  const strict = await TestBroker.start({ denyPublish: deniesBirths });
  const lines: string[] = [];
  const { gate, node } = await startEdgeGate(strict.url, 'kicked2', { log: createLogger('DEBUG', (line) => lines.push(line)) });
  try {
    await until(() => strict.logins.length >= 1, 'a first attempt');
    const from = strict.logins.length;
    await new Promise((resolve) => setTimeout(resolve, 6000));
    // 0.5 + 1 + 2 + 4 s: at most four more attempts in six seconds (without the back-off, some twenty).
    const attempts = strict.logins.length - from;
    assert.ok(attempts >= 2 && attempts <= 4, `${attempts} attempts in 6 s`);
    assert.ok(node.stats().connectFailures.dropped_after_birth! >= 3);
    // Logged once: the rest are held back by the once-a-minute rule.
    assert.equal(lines.filter((text) => text.includes('[dropped_after_birth]')).length, 1);
  } finally {
    await node.stop();
    await gate.close();
    await strict.stop();
  }
});

test('leaving on its own right after the birth (Next Server) is not counted as dropped', async () => {
  const first = await TestBroker.start();
  const second = await TestBroker.start();
  const host = await TahuHost.connect(first.url, 'plant');
  const { gate, node } = await startEdgeGate(first.url, 'kicked3', { moreServers: [second.url] });
  try {
    await host.waitFor((m) => m.edgeNode === 'kicked3' && m.type === 'NBIRTH', 10_000, 'NBIRTH on the first server');
    await host.command('kicked3', undefined, [{ name: 'Node Control/Next Server', type: 'Boolean', value: true }]);
    await until(() => node.stats().server === second.url && node.stats().born, 'born on the second server');
    assert.deepEqual(node.stats().connectFailures, {});
  } finally {
    await node.stop();
    await gate.close();
    await host.close();
    await second.stop();
    await first.stop();
  }
});
