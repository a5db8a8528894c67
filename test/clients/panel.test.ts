import assert from 'node:assert/strict';
import { copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { browserMissing, launchChromium, openPanel, seriousAxeViolations, watchErrors, type LaunchedBrowser } from '../helpers/browser.js';
import { FORM, bearer, configFile, httpCall } from '../helpers/http-call.js';
import { startHeldWriteSlave } from '../helpers/held-write-slave.js';
import { startSim, type SimProcess } from '../helpers/sim-process.js';
import { spawnDaemon, type SpawnedDaemon } from '../helpers/spawn-daemon.js';
import { artifactsDir, tempDir } from '../helpers/temp-dir.js';

// The built-in panel in Debian's Chromium, against the built daemon polling
// two simulated boards over Modbus TCP (each its own iogate-sim process, so
// one can be stopped). Everything is checked the way a user would see it
// (roles, accessible names, text) and against the API.

const skip = browserMissing();
const LIVE_MS = 1000;

function busYaml(name: string, port: number, id: number, model: string, product?: string): string {
  return [
    `  ${name}:`,
    '    type: MODBUSTCP',
    '    hostname: 127.0.0.1',
    `    port: ${port}`,
    '    timeout: 200',
    // As autogen writes it for a controller's own boards.
    ...(product ? ['    device_info:', '      family: Neuron', `      model: ${product}`] : []),
    '    devices:',
    `      ${id}:`,
    `        model: '${model}'`,
    `        slave-id: ${id}`,
  ].join('\n');
}

interface Rig {
  simA: SimProcess;
  simB: SimProcess;
  daemon: SpawnedDaemon;
  dir: string;
  stop(): Promise<void>;
}

/** Board 1 (Neuron 00, product M503) and board 2 (xS11, relays), each behind its own simulator; two simulated 1-Wire sensors. */
async function startRig(extraApis = '', websocket = true): Promise<Rig> {
  const simA = await startSim(['--model', '00', '--slave-id', '1', '--tcp', '127.0.0.1:0', '--control', '127.0.0.1:0']);
  const simB = await startSim(['--model', 'xS11', '--slave-id', '2', '--tcp', '127.0.0.1:0', '--control', '127.0.0.1:0']);
  const dirHolder = configFile('', 'iogate-panel-');
  const { dir, file } = configFile(
    [
      `alias_file: ${join(dirHolder.dir, 'alias.yaml')}`,
      'apis:',
      '  websocket:',
      `    enabled: ${websocket}`,
      extraApis,
      'comm_channels:',
      busYaml('BUS_A', simA.tcpPort!, 1, '00', 'M503'),
      busYaml('BUS_B', simB.tcpPort!, 2, 'xS11'),
      '  OWBUS:',
      '    type: OWFS',
      '    interval: 2',
      '    simulate: [28, 26]',
    ].join('\n'),
    'iogate-panel-',
  );
  const daemon = await spawnDaemon(['--config', file], { cwd: dir });
  return {
    simA, simB, daemon, dir: dirHolder.dir,
    async stop() {
      await daemon.stop();
      await simA.stop();
      await simB.stop();
    },
  };
}

async function apiValue(baseUrl: string, path: string, field = 'value'): Promise<unknown> {
  const reply = await httpCall(baseUrl, path);
  return reply.json[field];
}

describe('panel in Chromium', { skip }, () => {
  let chromium: LaunchedBrowser;
  let rig: Rig;
  let context: BrowserContext;
  let page: Page;
  let errors: string[];
  /** When board 2's simulator was stopped (Date.now()), for the offline age. */
  let stoppedAt = 0;

  before(async () => {
    chromium = await launchChromium();
    rig = await startRig();
    context = await chromium.context({ viewport: { width: 1280, height: 900 } });
    ({ page, errors } = await openPanel(context, rig.daemon.baseUrl));
  });
  after(async () => {
    await chromium?.close();
    await rig?.stop();
  });

  test('the page loads with no console errors and lists every configured device', async () => {
    const all = (await httpCall(rig.daemon.apiUrl, '/rest/all')).json as { dev: string; circuit: string }[];
    assert.ok(all.length > 50, `${all.length} devices`);
    const shown = await page.$$eval('article.dev', (cards) => cards.map((card) => card.getAttribute('data-key')));
    assert.deepEqual(new Set(shown), new Set(all.map((device) => `${device.dev}/${device.circuit}`)));
    assert.equal(shown.length, all.length);
    assert.equal(await page.locator('#count').textContent(), `${all.length} devices`);
    for (const board of ['1', '2']) {
      assert.equal(await page.locator(`section[data-board="${board}"]`).getAttribute('data-state'), 'online');
    }
    assert.deepEqual(errors, []);
  });

  test('clicking "do 1_01" switches the board\'s output (and Space switches it back)', async () => {
    const toggle = page.getByRole('switch', { name: 'do 1_01', exact: true });
    assert.equal(await toggle.getAttribute('aria-checked'), 'false');
    await toggle.click();
    await page.waitForSelector('[data-key="do/1_01"] [role=switch][aria-checked="true"]:not([aria-busy])');
    assert.equal(await apiValue(rig.daemon.apiUrl, '/rest/do/1_01'), 1);
    // The simulated board's coil register says so too (do 1_01 = bit 0 of register 1).
    assert.equal((await rig.simA.registers(1, 1, 1))[0]! & 1, 1);
    await toggle.press('Space');
    await page.waitForSelector('[data-key="do/1_01"] [role=switch][aria-checked="false"]:not([aria-busy])');
    assert.equal(await apiValue(rig.daemon.apiUrl, '/rest/do/1_01'), 0);
  });

  test('an input moved by the simulator and an output switched by a POST appear within a second', async () => {
    const started = Date.now();
    await rig.simA.setRegisters(1, 0, [0b0100]);
    await page.waitForFunction(() => document.querySelector('[data-key="di/1_03"] .val')?.textContent?.startsWith('on'), undefined, { timeout: LIVE_MS });
    const reply = await httpCall(rig.daemon.apiUrl, '/rest/ro/2_05', { method: 'POST', headers: FORM, body: 'value=1' });
    assert.equal(reply.status, 200);
    await page.getByRole('switch', { name: 'ro 2_05', exact: true }).and(page.locator('[aria-checked="true"]')).waitFor({ timeout: LIVE_MS });
    assert.ok(Date.now() - started < 5000);
  });

  test('analog output by number field and slider; DI debounce, counter mode and reset; a register', async () => {
    await page.getByRole('spinbutton', { name: 'ao 1_01 value', exact: true }).fill('2.5');
    await page.getByRole('spinbutton', { name: 'ao 1_01 value', exact: true }).press('Enter');
    await waitForApi(rig.daemon.apiUrl, '/rest/ao/1_01', 2.5);
    const slider = page.getByRole('slider', { name: 'ao 1_01', exact: true });
    await slider.focus();
    await slider.press('End');
    await waitForApi(rig.daemon.apiUrl, '/rest/ao/1_01', 10);
    // From the keyboard: a disclosure button, expanded state announced.
    const settings = page.getByRole('button', { name: 'Settings di 1_02', exact: true });
    await settings.focus();
    await settings.press('Enter');
    assert.equal(await settings.getAttribute('aria-expanded'), 'true');
    const debounce = page.getByRole('spinbutton', { name: 'Debounce (ms) di 1_02', exact: true });
    await debounce.fill('120');
    await debounce.press('Enter');
    await waitForApi(rig.daemon.apiUrl, '/rest/di/1_02', 120, 'debounce');
    await page.getByRole('combobox', { name: 'Counter di 1_02', exact: true }).selectOption('Disabled');
    await waitForApi(rig.daemon.apiUrl, '/rest/di/1_02', 'Disabled', 'counter_mode');
    await page.getByRole('button', { name: 'Reset counter di 1_02', exact: true }).click();
    await waitForApi(rig.daemon.apiUrl, '/rest/di/1_02', 0, 'counter');
    // Registers sit behind the board's closed "registers (N)" disclosure.
    await page.locator('section[data-board="1"] details.internal > summary').click();
    await page.getByRole('button', { name: 'Settings register 1_20', exact: true }).click();
    const register = page.getByRole('spinbutton', { name: 'Value register 1_20', exact: true });
    await register.fill('7');
    await register.press('Enter');
    await waitForApi(rig.daemon.apiUrl, '/rest/register/1_20', 7);
  });

  test("a DI shows the board's counter and, beside it, counter_total", async () => {
    const value = page.locator('[data-key="di/1_01"] .val');
    await value.filter({ hasText: /^(on|off) · counter \d+ · total \d+$/ }).waitFor({ timeout: 10_000 });
    const total = Number(/total (\d+)/.exec(String(await value.textContent()))![1]);
    assert.equal(total, await apiValue(rig.daemon.apiUrl, '/rest/di/1_01?meta=1', 'counter_total'));
  });

  test('registers are not downloaded while their disclosure is closed; opened, they are', async () => {
    const fresh = await chromium.context({ viewport: { width: 1280, height: 900 } });
    const requests: string[] = [];
    fresh.on('request', (request) => {
      if (new URL(request.url()).pathname.startsWith('/rest/register')) requests.push(request.url());
    });
    const { page: opened } = await openPanel(fresh, rig.daemon.baseUrl);
    // Two refresh periods (5 s each) with every disclosure closed.
    const slaveRefresh = opened.waitForRequest((request) => new URL(request.url()).pathname === '/rest/modbus_slave/all', { timeout: 8000 });
    await slaveRefresh;
    await opened.waitForRequest((request) => new URL(request.url()).pathname === '/rest/modbus_slave/all', { timeout: 8000 });
    assert.deepEqual(requests, []);
    const fetched = opened.waitForRequest((request) => new URL(request.url()).pathname === '/rest/register/all', { timeout: 3000 });
    await opened.locator('section[data-board="2"] details.internal > summary').click();
    await fetched;
    await fresh.close();
  });

  test('board headers name product, board and slave; registers and internals start collapsed, counted', async () => {
    assert.equal(await page.locator('section[data-board="1"] > h2 > span').first().textContent(), 'M503 · board 00 · slave 1');
    assert.equal(await page.locator('section[data-board="2"] > h2 > span').first().textContent(), 'xS11 · slave 2');
    assert.equal(await page.locator('section[data-board="1"]').getAttribute('aria-label'), 'M503 · board 00 · slave 1');
    for (const board of ['1', '2']) {
      const internal = page.locator(`section[data-board="${board}"] details.internal`);
      const cards = await internal.locator('article.dev').count();
      assert.ok(cards > 0);
      assert.equal(await internal.locator('> summary').textContent(), `registers (${cards})`);
      const inside = await internal.locator('article.dev').evaluateAll((all) => [...new Set(all.map((card) => card.getAttribute('data-key')!.split('/')[0]))]);
      assert.ok(inside.includes('modbus_slave'), inside.join());
      assert.ok(inside.every((dev) => ['register', 'modbus_slave', 'device_info', 'owpower', 'nv_save'].includes(dev!)), inside.join());
    }
    // Board 2 is the one not opened by another test.
    assert.equal(await page.locator('section[data-board="2"] details.internal').getAttribute('open'), null);
    // A search that finds a register opens its disclosure; clearing it closes it again.
    await page.getByRole('searchbox', { name: 'Search' }).fill('register 2_');
    await page.waitForSelector('section[data-board="2"] details.internal[open]');
    await page.getByRole('searchbox', { name: 'Search' }).fill('');
    await page.waitForSelector('section[data-board="2"] details.internal:not([open])');
  });

  test('1-Wire cards: titled, with units, nothing cut; a watchdog\'s name is whole', async () => {
    const thermometer = page.locator('section[data-board="1-wire"] [data-key^="temp/"]').first();
    assert.match(String(await thermometer.locator('.name').textContent()), /^Thermometer ?temp [0-9A-F]{16} · DS18B20$/);
    assert.match(String(await thermometer.locator('.val').textContent()), /^-?\d+(\.\d+)? °C$/);
    const humidity = page.locator('section[data-board="1-wire"] [data-key^="1wdevice/"]').first();
    assert.match(String(await humidity.locator('.name').textContent()), /^Humidity sensor ?1wdevice [0-9A-F]{16} · DS2438$/);
    const readings = await humidity.locator('.reading').evaluateAll((rows) => rows.map((row) => `${row.querySelector('.rlabel')!.textContent} ${row.querySelector('.rval')!.textContent}`));
    assert.equal(readings.length, 4);
    for (const [reading, unit] of readings.map((text, i) => [text, ['°C', '%RH', 'V', 'V'][i]] as const)) assert.ok(reading.endsWith(` ${unit}`), reading);
    // No text is cut or runs out of its card, at phone width either.
    const phone = await chromium.context({ viewport: { width: 360, height: 800 } });
    const { page: small } = await openPanel(phone, rig.daemon.baseUrl);
    for (const shown of [page, small]) {
      const overflowing = await shown.locator('article.dev:not([hidden]) :is(.name, .val, .rlabel, .rval, .sub)').evaluateAll((elements) =>
        elements.filter((element) => element.getBoundingClientRect().width > 0 && (element.scrollWidth > element.clientWidth + 1 || element.getBoundingClientRect().right > element.closest('article')!.getBoundingClientRect().right + 1)).map((element) => `${element.closest('article')!.getAttribute('data-key')}: ${element.textContent}`),
      );
      assert.deepEqual(overflowing, []);
      const watchdog = shown.locator('[data-key="wd/1_01"]');
      assert.equal(await watchdog.locator('.name').textContent(), '1_01wd');
      assert.equal(await watchdog.locator('.sub').textContent(), 'timeout 5000 ms');
    }
    await phone.close();
  });

  test('trends: every AI, AO and 1-Wire value has a chart, full from the daemon\'s last hour on open; a click opens a big one', async () => {
    // Wait for the daemon's second sample (one per 10 s), then open a fresh page.
    let samples = 0;
    const started = Date.now();
    while (samples < 2) {
      assert.ok(Date.now() - started < 30_000, 'two trend samples within 30 s');
      const trends = (await httpCall(rig.daemon.apiUrl, '/trends')).json as { series: Array<{ dev: string; circuit: string; values: unknown[] }> };
      samples = trends.series.find((one) => one.dev === 'ai' && one.circuit === '1_01')?.values.length ?? 0;
      if (samples < 2) await new Promise((resolve) => setTimeout(resolve, 500));
    }
    const fresh = await chromium.context({ viewport: { width: 1280, height: 900 } });
    const { page: opened, errors: openedErrors } = await openPanel(fresh, rig.daemon.baseUrl);
    for (const key of ['ai/1_01', 'ao/1_01']) {
      const points = opened.locator(`[data-key="${key}"] .spark polyline`);
      await points.first().waitFor({ state: 'attached' });
      const count = await points.evaluateAll((lines) => lines.reduce((sum, line) => sum + line.getAttribute('points')!.trim().split(' ').length, 0));
      assert.ok(count >= samples, `${key}: ${count} points drawn for ${samples} samples kept by the daemon`);
    }
    const sparks = await opened.locator('.spark').evaluateAll((buttons) => buttons.map((button) => button.getAttribute('aria-label')));
    for (const name of ['Trend of value ai 1_01, last hour', 'Trend of value ao 1_01, last hour', 'Trend of Humidity 1wdevice']) {
      assert.ok(sparks.some((label) => label!.startsWith(name)), `${name} in ${sparks.join(' | ')}`);
    }
    assert.ok(sparks.some((label) => /^Trend of value temp [0-9A-F]{16}, last hour$/.test(label!)), sparks.join(' | '));
    await opened.getByRole('button', { name: 'Trend of value ai 1_01, last hour', exact: true }).click();
    const chart = opened.getByRole('img', { name: 'Value · ai 1_01, last hour', exact: true });
    await chart.waitFor();
    assert.ok((await chart.locator('polyline').count()) > 0);
    assert.match(String(await opened.locator('#trend-range').textContent()), /^Last hour: -?[\d.]+ to -?[\d.]+ V$/);
    await opened.keyboard.press('Escape');
    await opened.waitForSelector('#trend-dialog:not([open])', { state: 'attached' });
    assert.deepEqual(openedErrors, []);
    await fresh.close();
  });

  test('a rejected write shows the error message and the control keeps the true state', async () => {
    await page.getByRole('button', { name: 'Settings wd 1_01', exact: true }).click();
    const timeout = page.getByRole('spinbutton', { name: 'Timeout (ms) wd 1_01', exact: true });
    await timeout.fill('70000');
    await timeout.press('Enter');
    const error = page.locator('[data-key="wd/1_01"] [role=alert]');
    await error.filter({ hasText: /ValidationError|timeout/i }).waitFor();
    assert.match(String(await error.textContent()), /65535/);
    await page.waitForFunction(() => (document.getElementById('wd/1_01/timeout') as HTMLInputElement | null)?.value === '5000');
    assert.equal(await apiValue(rig.daemon.apiUrl, '/rest/wd/1_01', 'timeout'), 5000);
  });

  test('rename with an alias, then save the aliases to the file', async () => {
    await page.getByRole('button', { name: 'Settings do 1_04', exact: true }).click();
    await page.getByRole('textbox', { name: 'Alias do 1_04', exact: true }).fill('Pump');
    await page.getByRole('button', { name: 'Rename do 1_04', exact: true }).click();
    await page.getByRole('switch', { name: 'Pump (do 1_04)', exact: true }).waitFor();
    assert.equal(await apiValue(rig.daemon.apiUrl, '/rest/do/1_04', 'alias'), 'Pump');
    await page.getByRole('button', { name: 'Save aliases', exact: true }).click();
    await page.locator('#count', { hasText: 'Aliases saved' }).waitFor();
    assert.match(readFileSync(join(rig.dir, 'alias.yaml'), 'utf8'), /Pump/);
    // Search finds it by alias, and the type filter narrows to relays.
    await page.getByRole('searchbox', { name: 'Search' }).fill('pump');
    assert.deepEqual(await visibleKeys(page), ['do/1_04']);
    await page.getByRole('searchbox', { name: 'Search' }).fill('');
    await page.getByRole('combobox', { name: 'Type' }).selectOption('ro');
    const relays = await visibleKeys(page);
    assert.ok(relays.length > 0 && relays.every((key) => key.startsWith('ro/2_')), relays.join());
    await page.getByRole('combobox', { name: 'Board' }).selectOption('1');
    assert.deepEqual(await visibleKeys(page), []);
    await page.getByRole('combobox', { name: 'Type' }).selectOption('');
    await page.getByRole('searchbox', { name: 'Search' }).fill('1_01 led');
    assert.deepEqual(await visibleKeys(page), ['led/1_01']);
    await page.getByRole('searchbox', { name: 'Search' }).fill('');
    await page.getByRole('combobox', { name: 'Board' }).selectOption('');
  });

  test('a degraded board and device types the panel does not know are shown', async () => {
    const context2 = await chromium.context();
    // The bus work may add `state` to modbus_slave, and 1-Wire brings new types: fake both in the listing.
    // The panel asks for the meta view (`/rest/all?meta=1`).
    await context2.route((url) => url.pathname === '/rest/all', async (route) => {
      const response = await route.fetch();
      const devices = (await response.json()) as Record<string, unknown>[];
      for (const device of devices) if (device.dev === 'modbus_slave' && device.circuit === '2') Object.assign(device, { state: 'degraded', success_ratio: 0.875 });
      devices.push({ dev: 'temp', circuit: '28FF1234', value: 21.5, unit: '°C', typ: 'DS18B20', lost: false });
      devices.push({ dev: 'data_point', circuit: 'outside', value: 3 });
      await route.fulfill({ response, json: devices });
    });
    const { page: faked, errors: fakedErrors } = await openPanel(context2, rig.daemon.baseUrl);
    assert.equal(await faked.locator('section[data-board="2"]').getAttribute('data-state'), 'degraded');
    assert.equal(await faked.locator('section[data-board="2"] .state').textContent(), 'degraded');
    assert.match(String(await faked.locator('section[data-board="2"] .stats').textContent()), /success ratio 87\.5 %/);
    assert.equal(await faked.locator('[data-key="temp/28FF1234"] .val').textContent(), '21.5 °C');
    // "Other" shows the devices of no board, and only those.
    const others = await faked.locator('section[data-board=""] article.dev').evaluateAll((cards) => cards.map((card) => card.getAttribute('data-key')!));
    assert.ok(others.includes('data_point/outside') && others.length < 5, others.join());
    await faked.getByRole('combobox', { name: 'Board' }).selectOption({ label: 'Other' });
    const visible = await visibleKeys(faked);
    assert.ok(visible.includes('data_point/outside') && visible.every((key) => others.includes(key)), visible.join());
    await faked.getByRole('combobox', { name: 'Board' }).selectOption('');
    await faked.getByRole('button', { name: 'Settings temp 28FF1234', exact: true }).click();
    await faked.getByRole('textbox', { name: 'Alias temp 28FF1234', exact: true }).waitFor();
    assert.deepEqual(fakedErrors, []);
    await context2.close();
  });

  test('axe-core finds no serious or critical accessibility violation, in either theme', async () => {
    for (const colorScheme of ['light', 'dark'] as const) {
      // axe is injected as a script, which the panel's CSP rightly forbids: bypass it for the audit only.
      const audit = await chromium.context({ colorScheme, bypassCSP: true, viewport: { width: 1280, height: 900 } });
      const { page: audited } = await openPanel(audit, rig.daemon.baseUrl);
      await audited.getByRole('button', { name: 'Settings di 1_01', exact: true }).click();
      await audited.getByRole('button', { name: 'Settings do 1_01', exact: true }).click();
      const serious = await seriousAxeViolations(audited);
      assert.deepEqual(serious, [], `${colorScheme}: ${JSON.stringify(serious)}`);
      await audit.close();
    }
  });

  test('screenshots at phone and desktop widths in both themes', async () => {
    const dir = artifactsDir('iogate-panel-shots-');
    const paths: string[] = [];
    await httpCall(rig.daemon.apiUrl, '/rest/do/1_02', { method: 'POST', headers: FORM, body: 'value=1' });
    for (const colorScheme of ['light', 'dark'] as const) {
      for (const [width, height, name] of [[390, 844, 'phone'], [1280, 900, 'desktop']] as const) {
        const shot = await chromium.context({ colorScheme, viewport: { width, height } });
        const { page: shown, errors: shotErrors } = await openPanel(shot, rig.daemon.baseUrl);
        if (name === 'desktop') await shown.getByRole('button', { name: 'Settings Pump (do 1_04)', exact: true }).click();
        const path = join(dir, `panel-${name}-${colorScheme}.png`);
        await shown.screenshot({ path });
        // A full-page capture draws every card, also those far below the fold (no lazy rendering).
        const full = join(dir, `panel-${name}-${colorScheme}-full.png`);
        await shown.screenshot({ path: full, fullPage: true });
        const lazy = await shown.locator('article.dev').evaluateAll((cards) => cards.filter((card) => getComputedStyle(card).contentVisibility === 'auto' || ((card as HTMLElement).offsetParent !== null && card.getBoundingClientRect().height < 20)).map((card) => card.getAttribute('data-key')));
        assert.deepEqual(lazy, []);
        paths.push(full);
        assert.ok(readFileSync(path).length > 1000);
        assert.deepEqual(shotErrors, []);
        paths.push(path);
        await shot.close();
      }
    }
    // For docs/panel.md: IOGATE_PANEL_SCREENSHOT=docs/panel.png npm run test:clients
    const target = process.env['IOGATE_PANEL_SCREENSHOT'];
    if (target) copyFileSync(join(dir, 'panel-desktop-light.png'), target);
    process.stderr.write(`panel screenshots:\n  ${paths.join('\n  ')}\n`);
  });

  test('a failed switch shows the error and returns to the true state; a stopped slave shows offline', async () => {
    stoppedAt = Date.now();
    await rig.simB.stop();
    await page.waitForSelector('section[data-board="2"][data-state="offline"]', { timeout: 10_000 });
    assert.equal(await page.locator('section[data-board="2"] .state').textContent(), 'offline');
    assert.equal(await page.locator('section[data-board="1"]').getAttribute('data-state'), 'online');
    const relay = page.getByRole('switch', { name: 'ro 2_01', exact: true });
    assert.equal(await relay.getAttribute('aria-checked'), 'false');
    await relay.click();
    const error = page.locator('[data-key="ro/2_01"] [role=alert]');
    await error.filter({ hasText: /\w/ }).waitFor();
    assert.match(String(await error.textContent()), /not connected|offline/i);
    await page.waitForSelector('[data-key="ro/2_01"] [role=switch][aria-checked="false"]:not([aria-busy])');
    assert.deepEqual(errors.filter((text) => !/status of (400|50\d)/.test(text)), []);
  });

  test("an offline board's cards are greyed and say how old their values are; the other board's are not", async () => {
    // Board 2's simulator was stopped by the test before.
    const card = page.locator('[data-key="ro/2_01"]');
    await page.waitForSelector('[data-key="ro/2_01"].q-offline', { timeout: 10_000 });
    await card.locator('.age').filter({ hasText: /^board offline · last read \d+ (s|min) ago$/ }).waitFor();
    const before = String(await card.locator('.age').textContent());
    // The age is that of the last good read (the API's age_s): about the time since the board stopped, never more than a scan or two beyond it.
    const shown = Number(/(\d+) s/.exec(before)?.[1]);
    const sinceStop = (Date.now() - stoppedAt) / 1000;
    const ageS = Number(await apiValue(rig.daemon.apiUrl, '/rest/ro/2_01?meta=1', 'age_s'));
    assert.ok(shown <= sinceStop + 1 && shown >= sinceStop - 3, `shown ${shown} s, board stopped ${sinceStop.toFixed(1)} s ago`);
    assert.ok(Math.abs(shown - ageS) <= 2, `shown ${shown} s, age_s ${ageS}`);
    // The age counts on in the browser.
    await card.locator('.age').filter({ hasNotText: before }).waitFor({ timeout: 5000 });
    const style = await card.locator('.head').evaluate((head) => getComputedStyle(head).opacity);
    assert.ok(Number(style) < 1, `greyed (opacity ${style})`);
    assert.doesNotMatch(String(await page.locator('[data-key="do/1_01"]').getAttribute('class')), /\bq-/, 'a live board keeps its cards as they were');
    assert.equal(await page.locator('[data-key="do/1_01"] .age').isHidden(), true);
    const dir = artifactsDir('iogate-quality-shots-');
    // The board's header and its first cards, as a user scrolling to it sees them; and one card alone.
    await page.locator('section[data-board="2"] > h2').evaluate((heading) => window.scrollTo(0, heading.getBoundingClientRect().top + window.scrollY - 60));
    const path = join(dir, 'panel-offline-board.png');
    await page.screenshot({ path });
    const cardPath = join(dir, 'panel-offline-card.png');
    await page.locator('[data-key="ro/2_02"]').screenshot({ path: cardPath });
    process.stderr.write(`offline board screenshots: ${path} ${cardPath}\n`);
  });
});

describe('panel across a daemon restart', { skip }, () => {
  test('it shows the disconnection, reconnects by itself and is live again', async () => {
    const chromium = await launchChromium();
    const rig = await startRig();
    let daemon = rig.daemon;
    try {
      const context = await chromium.context();
      const { page } = await openPanel(context, daemon.baseUrl);
      const port = new URL(daemon.baseUrl).port;
      await daemon.stop();
      await page.waitForSelector('#conn[data-state="down"]', { timeout: 10_000 });
      const config = join(rig.daemon.child.spawnargs.at(-1)!);
      daemon = await spawnDaemon(['--config', config, '--port', port], { cwd: rig.dir });
      await page.waitForSelector('#conn[data-state="live"]', { timeout: 15_000 });
      await httpCall(daemon.apiUrl, '/rest/do/1_02', { method: 'POST', headers: FORM, body: 'value=1' });
      await page.getByRole('switch', { name: 'do 1_02', exact: true }).and(page.locator('[aria-checked="true"]')).waitFor({ timeout: LIVE_MS });
    } finally {
      await chromium.close();
      await daemon.stop();
      await rig.simA.stop();
      await rig.simB.stop();
    }
  });
});

describe('panel with the WebSocket off', { skip }, () => {
  test('it polls /rest/all every second and says so', async () => {
    const chromium = await launchChromium();
    const rig = await startRig('', false);
    try {
      const page = await (await chromium.context()).newPage();
      const errors = watchErrors(page);
      await page.goto(`${rig.daemon.baseUrl}/`);
      await page.waitForSelector('#conn[data-state="polling"]', { timeout: 10_000 });
      assert.equal(await page.locator('#conn').textContent(), 'Polling (no WebSocket)');
      await httpCall(rig.daemon.apiUrl, '/rest/do/1_02', { method: 'POST', headers: FORM, body: 'value=1' });
      await page.getByRole('switch', { name: 'do 1_02', exact: true }).and(page.locator('[aria-checked="true"]')).waitFor({ timeout: 2500 });
      // Only the refused WebSocket handshakes may have been logged.
      assert.deepEqual(errors.filter((text) => !/WebSocket connection/.test(text)), []);
    } finally {
      await chromium.close();
      await rig.stop();
    }
  });
});

/** A daemon whose one board holds every write until the test releases it, and a browser. */
async function heldWriteRig() {
  const slave = await startHeldWriteSlave();
  const { dir, file } = configFile(
    [`alias_file: ${join(tempDir('iogate-panel-'), 'alias.yaml')}`, 'apis:', '  websocket:', '    enabled: true', 'comm_channels:', busYaml('HELD', slave.port, 1, '00')].join('\n'),
    'iogate-panel-',
  );
  const daemon = await spawnDaemon(['--config', file], { cwd: dir }).catch(async (error) => {
    await slave.close();
    throw error;
  });
  const chromium = await launchChromium().catch(async (error) => {
    await daemon.stop();
    await slave.close();
    throw error;
  });
  return {
    slave,
    daemon,
    chromium,
    async stop() {
      await chromium.close();
      await daemon.stop();
      await slave.close();
    },
  };
}

describe('panel while a write is on the wire', { skip }, () => {
  test('the switch says "pending" until the board answers, then shows the true state', async () => {
    const { slave, daemon, chromium, stop } = await heldWriteRig();
    try {
      const { page, errors } = await openPanel(await chromium.context(), daemon.baseUrl);
      const toggle = page.getByRole('switch', { name: 'do 1_01', exact: true });
      await toggle.click();
      await slave.writeArrived;
      await page.waitForSelector('[data-key="do/1_01"] [role=switch][aria-busy="true"]');
      assert.equal(await page.locator('[data-key="do/1_01"] .pending').textContent(), 'pending');
      // Straight to the daemon: the held write's deadline leaves no room for a proxy's first-request warm-up.
      assert.equal(await apiValue(daemon.baseUrl, '/rest/do/1_01'), 0, 'not confirmed yet');
      slave.release();
      // This stand-in slave keeps coils apart from the registers iogate polls, so
      // the next scan reads the output back as 0: the switch must end up showing that.
      await page.waitForSelector('[data-key="do/1_01"] [role=switch]:not([aria-busy])');
      assert.equal(await page.locator('[data-key="do/1_01"] .pending').textContent(), '');
      assert.equal(await page.locator('[data-key="do/1_01"] [role=alert]').count(), 0, 'no error shown');
      await page.waitForSelector('[data-key="do/1_01"] [role=switch][aria-checked="false"]');
      assert.equal(await apiValue(daemon.apiUrl, '/rest/do/1_01'), 0);
      assert.deepEqual(errors, []);
    } finally {
      await stop();
    }
  });
});

describe('panel when a write\'s reply comes after the next change', { skip }, () => {
  test('the card keeps the newer state the WebSocket brought, not the older one in the reply', async () => {
    const { slave, daemon, chromium, stop } = await heldWriteRig();
    try {
      const page = await (await chromium.context()).newPage();
      const errors = watchErrors(page);
      // The page's own WebSocket, as the browser receives it: the scan after the write reads the
      // output back as 0 (this stand-in slave keeps coils apart from the polled registers).
      let sawOne = false;
      let zeroPushed!: () => void;
      const zeroAfterOne = new Promise<void>((resolve) => (zeroPushed = resolve));
      page.on('websocket', (socket) =>
        socket.on('framereceived', ({ payload }) => {
          for (const device of JSON.parse(String(payload)) as Array<{ dev: string; circuit: string; value: number }>) {
            if (device.dev !== 'do' || device.circuit !== '1_01') continue;
            if (device.value === 1) sawOne = true;
            else if (sawOne) zeroPushed();
          }
        }),
      );
      // The write's reply (value 1, true when the board confirmed it) reaches the page only once
      // that later reading has been pushed and drawn: the order a slow HTTP path or a busy
      // browser produces now and then.
      await page.route('**/json/do/1_01', async (route) => {
        const response = await route.fetch();
        await zeroAfterOne;
        await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve))));
        await route.fulfill({ response });
      });
      await page.goto(`${daemon.baseUrl}/`);
      await page.waitForSelector('#conn[data-state="live"]', { timeout: 10_000 });
      await page.getByRole('switch', { name: 'do 1_01', exact: true }).click();
      await slave.writeArrived;
      slave.release();
      await page.waitForSelector('[data-key="do/1_01"] [role=switch]:not([aria-busy])');
      assert.equal(await page.locator('[data-key="do/1_01"] [role=switch]').getAttribute('aria-checked'), 'false');
      assert.equal(await apiValue(daemon.apiUrl, '/rest/do/1_01'), 0);
      assert.deepEqual(errors, []);
    } finally {
      await stop();
    }
  });
});

describe('panel with access tokens', { skip }, () => {
  test('it asks for the token, keeps it for the session and then works (HTTP and WebSocket)', async () => {
    const token = 'panel-browser-token-42';
    const chromium = await launchChromium();
    const rig = await startRig(['  auth:', '    loopback_anonymous: false', '    tokens:', `      - {name: panel, token: ${token}, scope: write}`].join('\n'));
    try {
      const context = await chromium.context();
      const page = await context.newPage();
      const errors = watchErrors(page);
      await page.goto(`${rig.daemon.baseUrl}/`);
      const dialog = page.getByRole('dialog', { name: 'Access token' });
      await dialog.waitFor();
      // Dismissed, it can be opened again from the header.
      await page.keyboard.press('Escape');
      await dialog.waitFor({ state: 'hidden' });
      await page.getByRole('alert').filter({ hasText: 'needs an access token' }).waitFor();
      await page.getByRole('button', { name: 'Token…', exact: true }).click();
      await dialog.waitFor();
      await dialog.getByLabel('Token').fill('wrong-token');
      await dialog.getByRole('button', { name: 'Connect' }).click();
      await dialog.getByText(/not valid/).waitFor();
      await dialog.getByLabel('Token').fill(token);
      await dialog.getByRole('button', { name: 'Connect' }).click();
      await page.waitForSelector('#conn[data-state="live"]', { timeout: 10_000 });
      assert.equal(await page.evaluate(() => sessionStorage.getItem('iogate-token')), token);
      assert.equal(await page.evaluate(() => localStorage.length), 0);
      await page.getByRole('switch', { name: 'do 1_03', exact: true }).click();
      await waitForApi(rig.daemon.apiUrl, '/rest/do/1_03', 1, 'value', bearer(token));
      await httpCall(rig.daemon.apiUrl, '/rest/do/1_02', { method: 'POST', headers: { ...FORM, ...bearer(token) }, body: 'value=1' });
      await page.getByRole('switch', { name: 'do 1_02', exact: true }).and(page.locator('[aria-checked="true"]')).waitFor({ timeout: LIVE_MS });
      // Only the refused first requests (401) may have logged resource errors.
      assert.deepEqual(errors.filter((text) => !/status of 401/.test(text)), []);
    } finally {
      await chromium.close();
      await rig.stop();
    }
  });
});

async function visibleKeys(page: Page): Promise<string[]> {
  return page.$$eval('article.dev', (cards) =>
    cards.filter((card) => (card as HTMLElement).offsetParent !== null).map((card) => card.getAttribute('data-key')!),
  );
}

async function waitForApi(baseUrl: string, path: string, expected: unknown, field = 'value', headers: Record<string, string> = {}): Promise<void> {
  const deadline = Date.now() + 5000;
  let last: unknown;
  while (Date.now() < deadline) {
    last = (await httpCall(baseUrl, path, { headers })).json?.[field];
    if (last === expected) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.equal(last, expected, `${path} ${field}`);
}

