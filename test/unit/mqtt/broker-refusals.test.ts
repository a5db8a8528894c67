import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TestBroker } from '../../helpers/mqtt-broker.js';
import { startGateway } from '../../helpers/mqtt-gateway.js';

// What the broker refuses after TLS: a login (a refused CONNACK, which mqtt.js
// itself never retries) and the command subscription (an ACL answering the
// SUBACK with 0x80). Each is logged with its cause, counted, and asked again
// with growing delays, so a fix on the broker is picked up without a restart.

async function until(what: string, check: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

test('a refused login is logged as not authorized, counted, and retried with back-off', async () => {
  const broker = await TestBroker.start({ credentials: { username: 'plc', password: 'right' } });
  const gateway = await startGateway({ port: broker.port, clientId: 'plc', extra: '    username: plc\n    password: wrong' });
  try {
    await until('three refused logins', () => (gateway.bridge.stats().failures.not_authorized ?? 0) >= 3);
    assert.ok(gateway.log.some((line) => line.startsWith('WARN') && line.includes('[not_authorized]')), gateway.log.join('\n'));
    const delays = gateway.log.filter((line) => line.includes('[not_authorized]')).map((line) => Number(/retrying in ([\d.]+) s/.exec(line)?.[1]));
    assert.ok(delays[2]! > delays[0]!, `the retries back off: ${delays.join(', ')}`);
    assert.doesNotMatch(gateway.log.join('\n'), /wrong/, 'the password is not logged');
    assert.equal(gateway.bridge.stats().connected, false);
  } finally {
    await gateway.stop();
    await broker.stop();
  }
});

test('a denied command subscription is logged, counted and asked again; states still go out', async () => {
  let deny = true;
  const broker = await TestBroker.start({ denySubscribe: (filter) => deny && filter.includes('/cmd/') });
  const gateway = await startGateway({ port: broker.port, clientId: 'plc' });
  try {
    await until('two denied subscriptions', () => (gateway.bridge.stats().failures.subscribe_denied ?? 0) >= 2).catch((error: Error) => {
      throw new Error(`${error.message}: ${gateway.log.join('\n')}`);
    });
    const line = gateway.log.find((text) => text.includes('[subscribe_denied]'))!;
    assert.match(line, /^ERROR MQTT: cannot subscribe to plc\/cmd\/#: the broker denied the subscription: not authorized \(ACL\)/);
    assert.equal(gateway.bridge.stats().connected, true, 'the connection stays up for the states');
    // The ACL is fixed: the next attempt subscribes, and the count stops growing.
    deny = false;
    await until('a granted subscription', () => broker.granted.includes('plc/cmd/#'), 30_000);
  } finally {
    await gateway.stop();
    await broker.stop();
  }
});
