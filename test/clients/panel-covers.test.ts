import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { browserMissing, launchChromium, openPanel, seriousAxeViolations, type LaunchedBrowser } from '../helpers/browser.js';
import { configFile, httpCall } from '../helpers/http-call.js';
import { relayAtSimulator, relayBoardBusYaml, startRelayBoardSim } from '../helpers/brain-relay-sim.js';
import type { SimProcess } from '../helpers/sim-process.js';
import { spawnDaemon, type SpawnedDaemon } from '../helpers/spawn-daemon.js';
import { artifactsDir } from '../helpers/temp-dir.js';

// Cover cards of the built-in panel in Debian's Chromium, against the built
// daemon and a relay board simulated in another process: open, stop and close
// buttons, a position slider that follows the cover as it moves, keyboard
// use, axe-core, and screenshots to look at.

const skip = browserMissing();
/** Relays of the relay board (brain-relay-sim.ts): ro 2_01 is bit 0. */
const UP = 0;
const DOWN = 1;

describe('cover cards in Chromium', { skip }, () => {
  let chromium: LaunchedBrowser;
  let sim: SimProcess;
  let daemon: SpawnedDaemon;
  let page: Page;
  let errors: string[] = [];

  before(async () => {
    chromium = await launchChromium();
    sim = await startRelayBoardSim();
    const state = configFile('', 'iogate-panel-covers-');
    const { dir, file } = configFile(
      [
        `alias_file: ${join(state.dir, 'alias.yaml')}`,
        'apis:',
        '  websocket:',
        '    enabled: true',
        'comm_channels:',
        relayBoardBusYaml(sim),
        'covers:',
        '  living_room:',
        '    up: ro/2_01',
        '    down: ro/2_02',
        '    travel_up_s: 4',
        '    travel_down_s: 3.5',
        '    tilt_s: 0.6',
        '    overrun_s: 0.3',
        '  garage:',
        '    up: ro/2_03',
        '    down: ro/2_04',
        '    travel_up_s: 2',
        '    travel_down_s: 2',
        'interlocks:',
        '  - outputs: [ro/2_05, ro/2_06]',
        '    dwell_ms: 300',
      ].join('\n'),
      'iogate-panel-covers-',
    );
    daemon = await spawnDaemon(['--config', file], { cwd: dir });
    ({ page, errors } = await openPanel(await chromium.context({ viewport: { width: 1280, height: 900 } }), daemon.baseUrl));
  });

  after(async () => {
    await chromium?.close();
    await daemon?.stop();
    await sim?.stop();
  });

  const relay = (bit: number) => relayAtSimulator(sim, bit);

  test('each cover has a card with open, stop and close, on the board of its outputs', async () => {
    const card = page.locator('[data-key="cover/living_room"]');
    await card.waitFor();
    assert.equal(await page.locator('section[data-board="2"] [data-key="cover/living_room"]').count(), 1);
    for (const name of ['open cover living_room', 'stop cover living_room', 'close cover living_room']) {
      await page.getByRole('button', { name, exact: true }).waitFor();
    }
    assert.equal(await card.locator('.val').textContent(), 'not calibrated');
    assert.equal(await page.getByRole('slider', { name: 'Position cover living_room', exact: true }).getAttribute('aria-valuetext'), 'unknown');
  });

  test('Open runs the motor at the simulator; the slider follows the cover up; Stop stops it', async () => {
    await page.getByRole('button', { name: 'open cover living_room', exact: true }).click();
    await page.locator('[data-key="cover/living_room"] .cover[data-moving="up"]').waitFor();
    assert.equal(await relay(UP), true, 'up relay on at the simulator');
    // From an unknown position the first run goes the whole way; the slider shows 100 once there.
    const slider = page.getByRole('slider', { name: 'Position cover living_room', exact: true });
    await page.waitForFunction(() => document.querySelector('[data-key="cover/living_room"] input[type=range]')?.getAttribute('aria-valuetext') === '100 %', undefined, { timeout: 8000 });
    await page.locator('[data-key="cover/living_room"] .cover[data-moving="stopped"]').waitFor({ timeout: 3000 });
    assert.equal(await relay(UP), false);
    // Down to 30 % with the keyboard: the slider moves along with the pushed states.
    await slider.focus();
    await slider.fill('30');
    await slider.dispatchEvent('change');
    await page.locator('[data-key="cover/living_room"] .cover[data-moving="down"]').waitFor();
    const seen = new Set<string>();
    const deadline = Date.now() + 6000;
    while (Date.now() < deadline) {
      const text = await page.locator('[data-key="cover/living_room"] .reading').first().textContent();
      seen.add(String(text));
      if ((await page.locator('[data-key="cover/living_room"] .cover').getAttribute('data-moving')) === 'stopped') break;
      await page.waitForTimeout(100);
    }
    assert.ok(seen.size >= 3, `the reading moved through ${[...seen].join(', ')}`);
    const state = (await httpCall(daemon.baseUrl, '/rest/cover/living_room')).json;
    assert.ok(Math.abs(Number(state['position']) - 30) <= 3, `at ${state['position']} %`);
    await page.getByRole('button', { name: 'close cover living_room', exact: true }).click();
    await page.locator('[data-key="cover/living_room"] .cover[data-moving="down"]').waitFor();
    assert.equal(await relay(DOWN), true);
    await page.getByRole('button', { name: 'stop cover living_room', exact: true }).click();
    await page.locator('[data-key="cover/living_room"] .cover[data-moving="stopped"]').waitFor();
    assert.equal(await relay(DOWN), false);
    assert.deepEqual(errors, []);
  });

  test("a cover's relays say so and have no switch; interlocked relays name their partner", async () => {
    const up = page.locator('[data-key="ro/2_01"]');
    await up.locator('.role').filter({ hasText: /^Cover living_room · up \(use the cover's buttons\)$/ }).waitFor();
    assert.equal(await up.getByRole('switch').count(), 0, 'no raw switch for a cover relay');
    assert.equal(await page.locator('[data-key="ro/2_04"]').getByRole('switch').count(), 0);
    await up.getByRole('button', { name: 'Settings ro 2_01', exact: true }).click();
    assert.equal(await up.getByRole('button', { name: 'Pulse ro 2_01', exact: true }).count(), 0, 'no pulse for a cover relay');
    await page.locator('[data-key="ro/2_05"] .role').filter({ hasText: /^Interlocked with ro 2_06: one on at a time$/ }).waitFor();
    await page.getByRole('switch', { name: 'ro 2_06', exact: true }).waitFor();
    assert.equal(await page.locator('[data-key="ro/2_07"] .role').count(), 0);
  });

  test('a pulse from the panel: the relay goes on at the simulator, and off by itself after the time asked', async () => {
    await page.getByRole('button', { name: 'Settings ro 2_07', exact: true }).click();
    await page.getByRole('spinbutton', { name: 'Pulse seconds ro 2_07', exact: true }).fill('1.5');
    const started = Date.now();
    await page.getByRole('button', { name: 'Pulse ro 2_07', exact: true }).click();
    const deadline = Date.now() + 3000;
    while (!(await relay(6)) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(await relay(6), true, 'on at the simulator');
    const onAt = Date.now();
    while ((await relay(6)) && Date.now() < started + 6000) await new Promise((resolve) => setTimeout(resolve, 20));
    const offAt = Date.now();
    assert.equal(await relay(6), false, 'off again at the simulator');
    assert.ok(offAt - started >= 1400 && offAt - onAt <= 3500, `on for ${offAt - onAt} ms (${offAt - started} ms after the click)`);
    await page.waitForSelector('[data-key="ro/2_07"] [role=switch][aria-checked="false"]:not([aria-busy])');
    assert.deepEqual(errors, []);
  });

  test('an interlocked relay switched on while the other is on shows the 409 in its card', async () => {
    await page.getByRole('switch', { name: 'ro 2_05', exact: true }).click();
    await page.waitForSelector('[data-key="ro/2_05"] [role=switch][aria-checked="true"]:not([aria-busy])');
    await page.getByRole('switch', { name: 'ro 2_06', exact: true }).click();
    const error = page.locator('[data-key="ro/2_06"] [role=alert]');
    await error.filter({ hasText: /ro 2_05 is on/ }).waitFor();
    // In words: what happened first, no error class or raw JSON.
    const said = String(await error.textContent());
    assert.match(said, /^Refused: ro 2_06 stays off: ro 2_05 is on/);
    assert.doesNotMatch(said, /InterlockError|[{}"]/);
    await page.waitForSelector('[data-key="ro/2_06"] [role=switch][aria-checked="false"]:not([aria-busy])');
    assert.equal(await relay(5), false);
  });

  test('axe-core finds no serious or critical violation on the cover cards, in either theme; screenshots', async () => {
    const dir = artifactsDir('iogate-cover-shots-');
    await httpCall(daemon.baseUrl, '/rest/cover/garage', { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: 'command=close' });
    for (const colorScheme of ['light', 'dark'] as const) {
      const audit = await chromium.context({ colorScheme, bypassCSP: true, viewport: { width: 1280, height: 900 } });
      const { page: audited } = await openPanel(audit, daemon.baseUrl);
      // The relays with their roles (cover, interlock), before the type filter hides them.
      await audited.locator('[data-key="ro/2_01"] .role').waitFor();
      await audited.locator('section[data-board="2"] .group[data-type="ro"]').screenshot({ path: join(dir, `cover-relays-${colorScheme}.png`) });
      await audited.getByRole('combobox', { name: /type/i }).selectOption('cover').catch(() => undefined);
      await audited.locator('[data-key="cover/garage"]').waitFor();
      const path = join(dir, `covers-${colorScheme}.png`);
      await audited.screenshot({ path, fullPage: true });
      // Each slider's reading ("100 %") stays on one line.
      const wrapped = await audited.locator('.cover .range .reading').evaluateAll((readings) => readings.filter((reading) => reading.getBoundingClientRect().height > parseFloat(getComputedStyle(reading).lineHeight) * 1.5).map((reading) => reading.textContent));
      assert.deepEqual(wrapped, []);
      assert.ok(readFileSync(path).length > 1000);
      process.stderr.write(`cover cards screenshot: ${path}\n`);
      const serious = await seriousAxeViolations(audited);
      assert.deepEqual(serious, [], `${colorScheme}: ${JSON.stringify(serious)}`);
      await audit.close();
    }
  });
});
