import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { TestBroker } from '../../helpers/mqtt-broker.js';
import { Observer } from '../../helpers/mqtt-observer.js';
import { STORM_BOARD, reloadsSettled, sighupStorm, staysAlive } from '../../helpers/reload-storm.js';
import { spawnDaemon } from '../../helpers/spawn-daemon.js';
import { tempDir } from '../../helpers/temp-dir.js';

// Many reloads in quick succession, each of which restarts the MQTT bridge (a
// changed keepalive). A bridge stopped while its client was still connecting
// must be gone for good: mqtt.js would otherwise connect that client again on
// its own, deliver it a 'connect' after its stores were closed, and the
// bridge's publish at QoS 1 would throw in mqtt.js (exit 70); and it would
// take the session of the new client over, again and again. The broker
// answers each CONNECT 300 ms late, so every restart lands mid-connect.

function configText(brokerPort: number, keepalive: number, protocol: string): string {
  return [
    'alias_file: alias.yaml',
    'apis:',
    '  mqtt:',
    '    enabled: true',
    '    address: 127.0.0.1',
    `    port: ${brokerPort}`,
    '    client-id: iogate-storm',
    '    topic_prefix: plc',
    '    qos: 1',
    // aedes speaks 3.1.1 only; asked for at once, no CONNACK refusal resets mqtt.js's stores on the way.
    `    protocol: ${protocol}`,
    `    keepalive: ${keepalive}`,
    ...STORM_BOARD,
    '',
  ].join('\n');
}

for (const protocol of ['3.1.1', 'auto']) {
  test(`a storm of SIGHUPs, each restarting the MQTT bridge, leaves the daemon alive and connected (protocol: ${protocol})`, { timeout: 120_000 }, async () => {
    const broker = await TestBroker.start({ connackDelayMs: 300 });
    const dir = tempDir('iogate-mqtt-storm-');
    const file = join(dir, 'config.yaml');
    writeFileSync(file, configText(broker.port, 30, protocol));
    const daemon = await spawnDaemon(['--config', file], { cwd: dir, tap: false });
    const observer = await Observer.connect(broker.url, ['plc/status']);
    try {
      await observer.waitFor('plc/status', (text) => text === 'online');
      await sighupStorm(daemon, file, 30, (i) => configText(broker.port, 31 + i, protocol));
      await reloadsSettled(daemon);
      observer.forget();
      // Clients stopped mid-connect would come back after mqtt.js's reconnect period (0.5 s, then 1 s).
      await staysAlive(daemon, 3000);
      assert.doesNotMatch(daemon.output(), /TypeError|unexpected error/i);
      // Still serving, and the bridge of the last configuration is on the broker.
      const reply = await fetch(`${daemon.baseUrl}/rest/all`);
      assert.equal(reply.status, 200);
      await reply.arrayBuffer();
      // Each stopped bridge said 'offline' (retained) before the next one said 'online'.
      const late = await Observer.connect(broker.url, ['plc/status']);
      try {
        await late.waitFor('plc/status', (text) => text === 'online');
      } finally {
        await late.client.endAsync();
      }
      const lastLogins = broker.logins.length;
      await staysAlive(daemon, 1500);
      assert.equal(broker.logins.length, lastLogins, 'no client of an earlier bridge connects again');
    } finally {
      await observer.client.endAsync();
      const code = await daemon.stop();
      await broker.stop();
      assert.equal(code, 0, daemon.output().slice(-3000));
    }
  });
}
