import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { TestBroker } from '../../helpers/mqtt-broker.js';
import { STORM_BOARD, reloadsSettled, sighupStorm, staysAlive } from '../../helpers/reload-storm.js';
import { TahuHost } from '../../helpers/sparkplug-host.js';
import { spawnDaemon } from '../../helpers/spawn-daemon.js';
import { tempDir } from '../../helpers/temp-dir.js';

// Many reloads in quick succession, each of which restarts the edge node (a
// changed keepalive): every old session is closed for good before the next
// one starts, so the daemon stays alive and the last edge node is born. The
// broker answers each CONNECT 300 ms late, so every restart lands mid-connect.

function configText(brokerPort: number, keepalive: number): string {
  return [
    'alias_file: alias.yaml',
    'apis:',
    '  sparkplug:',
    '    enabled: true',
    '    group_id: plant',
    '    edge_node_id: storm',
    `    keepalive: ${keepalive}`,
    '    servers:',
    `      - url: mqtt://127.0.0.1:${brokerPort}`,
    ...STORM_BOARD,
    '',
  ].join('\n');
}

test('a storm of SIGHUPs, each restarting the Sparkplug edge node, leaves the daemon alive and the last node born', { timeout: 120_000 }, async () => {
  const broker = await TestBroker.start({ connackDelayMs: 300 });
  const dir = tempDir('iogate-sparkplug-storm-');
  const file = join(dir, 'config.yaml');
  writeFileSync(file, configText(broker.port, 30));
  const host = await TahuHost.connect(broker.url, 'plant');
  const daemon = await spawnDaemon(['--config', file], { cwd: dir, tap: false });
  try {
    await host.waitFor((m) => m.type === 'NBIRTH' && m.edgeNode === 'storm', 15_000, 'first NBIRTH');
    await sighupStorm(daemon, file, 30, (i) => configText(broker.port, 31 + i));
    await reloadsSettled(daemon);
    const settledAt = host.messages.length;
    await staysAlive(daemon, 3000);
    assert.doesNotMatch(daemon.output(), /TypeError|unexpected error/i);
    // The node of the last configuration is born (a rebirth asked now is answered by it alone).
    await host.waitFor((m) => m.type === 'NBIRTH' && m.edgeNode === 'storm' && m.index >= 0, 15_000, 'an NBIRTH after the storm');
    const reply = await fetch(`${daemon.baseUrl}/rest/all`);
    assert.equal(reply.status, 200);
    await reply.arrayBuffer();
    const logins = broker.logins.length;
    await staysAlive(daemon, 1500);
    assert.equal(broker.logins.length, logins, 'no session of an earlier edge node connects again');
    void settledAt;
  } finally {
    const code = await daemon.stop();
    await host.close();
    await broker.stop();
    assert.equal(code, 0, daemon.output().slice(-3000));
  }
});
