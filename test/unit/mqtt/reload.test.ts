import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { TestBroker } from '../../helpers/mqtt-broker.js';
import { Observer } from '../../helpers/mqtt-observer.js';
import { replaceFile } from '../../helpers/reload-storm.js';
import { spawnDaemon } from '../../helpers/spawn-daemon.js';
import { tempDir } from '../../helpers/temp-dir.js';

// MQTT across a configuration reload: the broker connection stays when
// neither its settings nor the buses changed; after a bus was added the
// bridge reconnects and announces the new board.

function configText(brokerPort: number, { corsOrigin, buses }: { corsOrigin: string; buses: string[] }): string {
  return [
    'alias_file: alias.yaml',
    'apis:',
    '  auth:',
    '    tokens: [{name: admin, token: admin-token-0000001, scope: admin}]',
    `    cors_origins: ["${corsOrigin}"]`,
    '  mqtt:',
    '    enabled: true',
    '    address: 127.0.0.1',
    `    port: ${brokerPort}`,
    '    client-id: iogate-reload',
    '    topic_prefix: plc',
    'comm_channels:',
    ...buses.flatMap((name, index) => [`  ${name}:`, '    type: SIMULATOR', '    toggle_ms: 0', '    devices:', `      ${index + 1}: {model: "00", scan_frequency: 10}`]),
    '',
  ].join('\n');
}

test('the broker connection survives a reload of other settings; a new bus reconnects it and is announced', async () => {
  const broker = await TestBroker.start();
  const dir = tempDir('iogate-mqtt-reload-');
  const file = join(dir, 'config.yaml');
  writeFileSync(file, configText(broker.port, { corsOrigin: 'https://a.example', buses: ['A'] }));
  const daemon = await spawnDaemon(['--config', file], { cwd: dir });
  const observer = await Observer.connect(broker.url, ['plc/availability/#']);
  const reload = async () => {
    const reply = await fetch(`${daemon.baseUrl}/config/reload`, { method: 'POST', headers: { Authorization: 'Bearer admin-token-0000001' } });
    assert.equal(reply.status, 200);
    return (await reply.json()).result;
  };
  try {
    await observer.waitFor('plc/availability/1', (text) => text === 'online');
    const logins = broker.logins.length;

    replaceFile(file, configText(broker.port, { corsOrigin: 'https://b.example', buses: ['A'] }));
    const same = await reload();
    assert.equal(same.components.mqtt, 'kept');
    assert.equal(same.components.access, 'updated');
    assert.equal(broker.logins.length, logins, 'no new MQTT connection');

    replaceFile(file, configText(broker.port, { corsOrigin: 'https://b.example', buses: ['A', 'B'] }));
    const added = await reload();
    assert.deepEqual(added.buses.started, ['modbus:B']);
    assert.equal(added.components.mqtt, 'restarted (the buses changed)');
    await observer.waitFor('plc/availability/2', (text) => text === 'online');
  } finally {
    await observer.client.endAsync();
    assert.equal(await daemon.stop(), 0);
    await broker.stop();
  }
});
