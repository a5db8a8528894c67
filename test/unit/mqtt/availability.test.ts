import assert from 'node:assert/strict';
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { TestBroker } from '../../helpers/mqtt-broker.js';
import { startGateway, writeMqttConfig } from '../../helpers/mqtt-gateway.js';
import { Observer } from '../../helpers/mqtt-observer.js';
import { node18 } from '../../helpers/node18.js';
import { BUNDLE, spawnDaemon } from '../../helpers/spawn-daemon.js';
import { tempDir } from '../../helpers/temp-dir.js';

// Bridge status (birth message and Last Will) and per-slave availability.

test('the lone bundle on Node 18 announces itself online, and the broker publishes its will when it is killed', async () => {
  const broker = await TestBroker.start();
  const observer = await Observer.connect(broker.url, ['killed/status', 'killed/event/do/1_01']);
  const dir = tempDir('iogate-will-');
  copyFileSync(BUNDLE, join(dir, 'iogate.js'));
  const config = writeMqttConfig({ port: broker.port, clientId: 'killed' });
  const daemon = await spawnDaemon(['--config', config], { node: node18(), cwd: dir, bundle: join(dir, 'iogate.js') });
  try {
    await observer.waitFor('killed/status', (text) => text === 'online');
    await observer.waitForJson('killed/event/do/1_01', (state) => state.circuit === '1_01');
    observer.forget();
    await daemon.stop('SIGKILL');
    const will = await observer.waitFor('killed/status', (text) => text === 'offline');
    assert.equal(will.text, 'offline');
    const late = await Observer.connect(broker.url, ['killed/status']);
    const retained = await late.waitFor('killed/status');
    assert.deepEqual([retained.text, retained.retain], ['offline', true], 'the will stays on the broker');
    await late.close();
  } finally {
    await daemon.stop();
    await observer.close();
    await broker.stop();
  }
});

test('a clean stop marks the bridge offline itself', async () => {
  const broker = await TestBroker.start();
  const observer = await Observer.connect(broker.url, ['clean/status']);
  const daemon = await spawnDaemon(['--config', writeMqttConfig({ port: broker.port, clientId: 'clean' })]);
  try {
    await observer.waitFor('clean/status', (text) => text === 'online');
    observer.forget();
    assert.equal(await daemon.stop('SIGTERM'), 0);
    await observer.waitFor('clean/status', (text) => text === 'offline');
  } finally {
    await daemon.stop();
    await observer.close();
    await broker.stop();
  }
});

test('a slave that stops answering is marked offline on its availability topic, and online again when it is back', async () => {
  const broker = await TestBroker.start();
  const gateway = await startGateway({ port: broker.port, clientId: 'avail' });
  const observer = await Observer.connect(broker.url, ['avail/availability/#']);
  const boards = gateway.runtime.simulations.get('SIM')!.boards;
  try {
    const online = await observer.waitFor('avail/availability/1', (text) => text === 'online');
    assert.equal(online.retain, true);
    observer.forget();
    boards.delete(1);
    await observer.waitFor('avail/availability/1', (text) => text === 'offline');
    const late = await Observer.connect(broker.url, ['avail/availability/1']);
    assert.equal((await late.waitFor('avail/availability/1')).text, 'offline', 'retained for late subscribers');
    await late.close();
    boards.set(1, gateway.board);
    await observer.waitFor('avail/availability/1', (text) => text === 'online');
  } finally {
    await observer.close();
    await gateway.stop();
    await broker.stop();
  }
});
