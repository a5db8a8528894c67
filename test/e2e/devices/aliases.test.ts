import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { readAliasFile } from '../../../src/registry/alias-store.js';
import { simulatorYaml, startDaemon, type TestDaemon } from '../../helpers/daemon.js';
import { get, postForm, postJson, waitFor } from '../../helpers/http.js';
import { assertShape } from '../../helpers/shape.js';
import { spawnDaemon } from '../../helpers/spawn-daemon.js';
import { tempDir } from '../../helpers/temp-dir.js';

// Aliases end to end: set through the API, used instead of circuits, listed by
// the alias manager, saved to alias.yaml (soon after a change, on demand, on
// shutdown) and loaded again by the next start, even after a kill -9.

const YAML = simulatorYaml({ 1: '00', 2: '01' });
const running: TestDaemon[] = [];

async function start(dir?: string): Promise<TestDaemon> {
  const daemon = await startDaemon(YAML, dir);
  running.push(daemon);
  return daemon;
}

async function stop(daemon: TestDaemon): Promise<void> {
  running.splice(running.indexOf(daemon), 1);
  await daemon.stop();
}

after(async () => {
  for (const daemon of running) await daemon.stop();
});

describe('aliases through the API', () => {
  test('an alias names the device as bare name and as al_NAME, in reads and writes', async () => {
    const daemon = await start();
    const url = (path: string) => daemon.baseUrl + path;
    const { body } = await postForm(url('/rest/ro/2_01'), { alias: 'kitchen' });
    assert.equal(body.result?.alias, 'kitchen');
    assert.equal((await get(url('/rest/ro/kitchen'))).body.circuit, '2_01');
    assert.equal((await get(url('/rest/relay/al_kitchen'))).body.alias, 'kitchen');
    await postJson(url('/json/ro/al_kitchen'), { value: 1 });
    assert.equal(daemon.board('SIM', 2).get('holding', 1) & 1, 1);
    assert.equal((await get(url('/rest/di/kitchen'))).status, 404, 'alias of another type');
  });

  test('invalid and duplicate aliases are 400 and change nothing', async () => {
    const daemon = await start();
    const url = (path: string) => daemon.baseUrl + path;
    await postForm(url('/rest/ro/2_01'), { alias: 'hall' });
    const before = daemon.board('SIM', 2).get('holding', 1);
    assert.equal((await postForm(url('/rest/ro/2_02'), { alias: 'hall', value: '1' })).status, 400);
    assert.equal((await postForm(url('/rest/ro/2_02'), { alias: 'no spaces' })).status, 400);
    assert.equal(daemon.board('SIM', 2).get('holding', 1), before);
    assert.equal((await get(url('/rest/ro/2_02'))).body.alias, undefined);
    await postForm(url('/rest/ro/2_01'), { alias: '' });
    assert.equal((await get(url('/rest/ro/hall'))).status, 404, 'empty alias removes it');
  });

  test('run/alias lists every alias in EVOK shape; save=1 answers once the file is written', async () => {
    const daemon = await start();
    const url = (path: string) => daemon.baseUrl + path;
    await postForm(url('/rest/led/1_01'), { alias: 'status' });
    await postJson(url('/json/wd/1_01'), { alias: 'dog' });
    const { body } = await get(url('/rest/run/alias'));
    assertShape(body, { dev: 'string', circuit: 'string', save: 'boolean', aliases: 'object' });
    assert.deepEqual(body.aliases, {
      status: { circuit: 'led_1_01', devtype: 'led' },
      dog: { circuit: 'watchdog_1_01', devtype: 'watchdog' },
    });
    const saved = await postForm(url('/rest/run/alias'), { save: '1' });
    assert.equal(saved.status, 200);
    assert.equal(saved.body.result?.save, false);
    const { aliases } = readAliasFile(join(daemon.dir, 'alias.yaml'));
    assert.deepEqual(Object.fromEntries(aliases), {
      dog: { circuit: '1_01', devtype: 'watchdog' },
      status: { circuit: '1_01', devtype: 'led' },
    });
    assert.equal((await postForm(url('/rest/run/alias'), { save: 'x' })).status, 400);
  });
});

describe('alias persistence', () => {
  test('a change is saved shortly after, without any request to save', async () => {
    const daemon = await start();
    await postForm(daemon.baseUrl + '/rest/ro/2_05', { alias: 'porch' });
    const file = join(daemon.dir, 'alias.yaml');
    await waitFor(() => existsSync(file) && readAliasFile(file).aliases.has('porch'), 5000);
  });

  test('aliases survive a restart; shutdown writes unsaved changes', async () => {
    const first = await start();
    await postForm(first.baseUrl + '/rest/ro/2_03', { alias: 'garage' });
    await stop(first);
    const second = await start(first.dir);
    const { status, body } = await get(second.baseUrl + '/rest/ro/garage');
    assert.equal(status, 200);
    assert.equal(body.circuit, '2_03');
    assert.equal(body.alias, 'garage');
  });

  test('saved aliases of absent devices are kept and saved again', async () => {
    const dir = tempDir('iogate-alias-');
    writeFileSync(
      join(dir, 'alias.yaml'),
      "aliases:\n  ghost:\n    circuit: '9_01'\n    devtype: ro\n  lamp:\n    circuit: '1_02'\n    devtype: led\nversion: '2.0'\n",
    );
    const daemon = await start(dir);
    const url = (path: string) => daemon.baseUrl + path;
    assert.equal((await get(url('/rest/led/lamp'))).body.circuit, '1_02');
    assert.deepEqual((await get(url('/rest/run/alias'))).body.aliases?.ghost, { circuit: 'ro_9_01', devtype: 'ro' });
    await postForm(url('/rest/ro/2_02'), { alias: 'fan' });
    await postForm(url('/rest/run/alias'), { save: '1' });
    const { aliases } = readAliasFile(join(dir, 'alias.yaml'));
    assert.deepEqual([...aliases.keys()].sort(), ['fan', 'ghost', 'lamp']);
  });
});

describe('alias file under kill -9', () => {
  test('the file is always complete, whenever the daemon dies', async () => {
    const dir = tempDir('iogate-kill-');
    writeFileSync(join(dir, 'config.yaml'), `alias_file: alias.yaml\n${YAML}`);
    const file = join(dir, 'alias.yaml');
    for (let round = 0; round < 5; round++) {
      const daemon = await spawnDaemon(['--config', join(dir, 'config.yaml')], { cwd: dir });
      const url = (path: string) => daemon.baseUrl + path;
      if (round > 0) assert.equal((await get(url('/rest/ro/keep'))).body.circuit, '2_08', `round ${round}: loaded`);
      await postForm(url('/rest/ro/2_08'), { alias: 'keep' });
      // Many aliases and saves in flight, then a kill at a moment the saves do not choose.
      const saves: Array<Promise<unknown>> = [];
      for (let i = 1; i <= 7; i++) {
        saves.push(postForm(url(`/rest/ro/2_0${i}`), { alias: `r${round}_${i}` }).then(() => postForm(url('/rest/run/alias'), { save: '1' })));
      }
      await new Promise((resolve) => setTimeout(resolve, 5 + round * 7));
      daemon.child.kill('SIGKILL');
      await Promise.allSettled(saves);
      await daemon.stop();
      if (existsSync(file)) {
        const { aliases, warnings } = readAliasFile(file);
        assert.deepEqual(warnings, [], `round ${round}: file parses cleanly:\n${readFileSync(file, 'utf8')}`);
        if (round > 0) assert.equal(aliases.get('keep')?.circuit, '2_08');
      }
      if (round === 0 && !existsSync(file)) {
        // The kill came before the first save; make sure later rounds have something to load.
        const again = await spawnDaemon(['--config', join(dir, 'config.yaml')], { cwd: dir });
        await postForm(again.baseUrl + '/rest/ro/2_08', { alias: 'keep' });
        await postForm(again.baseUrl + '/rest/run/alias', { save: '1' });
        await again.stop('SIGKILL');
      }
    }
  });
});
