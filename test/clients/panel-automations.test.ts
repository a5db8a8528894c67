import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { browserMissing, launchChromium, openPanel, seriousAxeViolations, type LaunchedBrowser } from '../helpers/browser.js';
import { configFile, httpCall } from '../helpers/http-call.js';
import { relayAtSimulator, relayBoardBusYaml, setRelayBoardInput, startRelayBoardSim } from '../helpers/brain-relay-sim.js';
import type { SimProcess } from '../helpers/sim-process.js';
import { spawnDaemon, type SpawnedDaemon } from '../helpers/spawn-daemon.js';
import { artifactsDir } from '../helpers/temp-dir.js';
import { eventually } from './rig.js';

// The panel's automations in Debian's Chromium, against the built daemon and
// a relay board simulated in another process: one card per automation with
// its last and next run and whether the board's firmware carries it; Disable
// stops it and Run now runs it, both judged at the simulator; axe-core and a
// screenshot to look at.

const skip = browserMissing();

describe('automations in the panel, in Chromium', { skip }, () => {
  let chromium: LaunchedBrowser;
  let sim: SimProcess;
  let daemon: SpawnedDaemon;
  let page: Page;
  let errors: string[] = [];

  before(async () => {
    chromium = await launchChromium();
    sim = await startRelayBoardSim();
    const state = configFile('', 'iogate-panel-automations-');
    const { dir, file } = configFile(
      [
        `alias_file: ${join(state.dir, 'alias.yaml')}`,
        'apis:',
        '  websocket:',
        '    enabled: true',
        'comm_channels:',
        relayBoardBusYaml(sim, { scanFrequency: 20 }),
        'automations:',
        '  porch:',
        '    when: {input: di/2_01, edge: rising}',
        '    then: {output: ro/2_03, set: on}',
        '  morning:',
        '    when: {at: "06:30"}',
        '    then: {output: ro/2_04, set: on}',
        '  hall:',
        '    when: {input: di/2_02}',
        '    then: {output: ro/2_02, follow: true}',
        '    offload: firmware',
      ].join('\n'),
      'iogate-panel-automations-',
    );
    daemon = await spawnDaemon(['--config', file], { cwd: dir });
    await eventually(async () => (await httpCall(daemon.baseUrl, '/rest/automation/hall')).json['offloaded'] === true, 'hall offloaded', 20_000);
    ({ page, errors } = await openPanel(await chromium.context({ viewport: { width: 1280, height: 900 } }), daemon.baseUrl));
  });

  after(async () => {
    await chromium?.close();
    await daemon?.stop();
    await sim?.stop();
  });

  const relay = (bit: number) => relayAtSimulator(sim, bit);
  const setInput = (bit: number, on: boolean) => setRelayBoardInput(sim, bit, on);

  const summary = async (id: string) => String(await page.locator(`[data-key="automation/${id}"] .val`).textContent());

  test('each automation has a card: on or off, last and next run, and whether the firmware carries it', async () => {
    for (const id of ['porch', 'morning', 'hall']) await page.locator(`[data-key="automation/${id}"]`).waitFor();
    assert.match(await summary('porch'), /^on · last never$/);
    const morning = await httpCall(daemon.baseUrl, '/rest/automation/morning');
    assert.equal(typeof morning.json['next_run'], 'string', 'a schedule has a next run');
    assert.match(await summary('morning'), /^on · last never · next \S.*$/);
    assert.match(await summary('hall'), /^on · in the board firmware · last never$/);
    // The sentence --check-config prints is on the card too.
    await page.locator('[data-key="automation/porch"] .automation .sub').filter({ hasText: /^porch: when di\/2_01 rises/ }).waitFor();
    assert.deepEqual(errors, []);
  });

  test('Disable stops the automation: a rise at the simulator leaves its relay off; Enable lets the next one through', async () => {
    await page.getByRole('button', { name: 'Disable automation porch', exact: true }).click();
    await page.getByRole('button', { name: 'Enable automation porch', exact: true }).waitFor();
    assert.match(await summary('porch'), /^off · /);
    assert.equal((await httpCall(daemon.baseUrl, '/rest/automation/porch')).json['enabled'], false);
    await setInput(0, true);
    await eventually(async () => (await httpCall(daemon.baseUrl, '/rest/di/2_01')).json['value'] === 1, 'iogate saw the rise');
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(await relay(2), false, 'disabled: the relay stayed off at the simulator');
    await setInput(0, false);
    await eventually(async () => (await httpCall(daemon.baseUrl, '/rest/di/2_01')).json['value'] === 0, 'iogate saw the fall');

    await page.getByRole('button', { name: 'Enable automation porch', exact: true }).click();
    await page.getByRole('button', { name: 'Disable automation porch', exact: true }).waitFor();
    await setInput(0, true);
    await eventually(() => relay(2), 'the relay on at the simulator');
    await page.locator('[data-key="automation/porch"] .val').filter({ hasText: /^on · last \S.* \(ok\)$/ }).waitFor();
  });

  test('Run now runs a schedule at once: its relay goes on at the simulator and the card shows the run', async () => {
    assert.equal(await relay(3), false);
    await page.getByRole('button', { name: 'Run now: automation morning', exact: true }).click();
    await eventually(() => relay(3), 'the relay on at the simulator');
    await page.locator('[data-key="automation/morning"] .val').filter({ hasText: /^on · last \S.* \(ok\) · next \S/ }).waitFor();
    assert.equal((await httpCall(daemon.baseUrl, '/rest/automation/morning')).json['runs'], 1);
    assert.deepEqual(errors, []);
  });

  test('axe-core finds no serious or critical violation on the automation cards, in either theme; screenshots', async () => {
    const dir = artifactsDir('iogate-automation-shots-');
    for (const colorScheme of ['light', 'dark'] as const) {
      const audit = await chromium.context({ colorScheme, bypassCSP: true, viewport: { width: 1280, height: 900 } });
      const { page: audited } = await openPanel(audit, daemon.baseUrl);
      await audited.locator('[data-key="automation/hall"]').waitFor();
      const path = join(dir, `automations-${colorScheme}.png`);
      await audited.locator('[data-key="automation/porch"]').locator('xpath=ancestor::section[1]').screenshot({ path });
      assert.ok(readFileSync(path).length > 1000);
      process.stderr.write(`automation cards screenshot: ${path}\n`);
      const serious = await seriousAxeViolations(audited);
      assert.deepEqual(serious, [], `${colorScheme}: ${JSON.stringify(serious)}`);
      await audit.close();
    }
  });
});
