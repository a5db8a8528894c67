import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { browserMissing, launchChromium, type LaunchedBrowser } from '../helpers/browser.js';
import { clientsMissing, diText, eventually, inputShownWithinASecond, openEvokPanel, startRig, type Rig } from './rig.js';
import { artifactsDir } from '../helpers/temp-dir.js';

// EVOK's own web panel (evok-web-jq, unmodified), served by nginx as Unipi
// ships it, in headless Chromium against the built daemon. The panel loads
// /rest/all, posts form writes, and stays live only by JSON.parse-ing every
// WebSocket frame: a binary frame (a Blob in the browser) froze it.

const skip = clientsMissing() ?? browserMissing();
const run = promisify(execFile);

/** Where screenshots go: IOGATE_CLIENTS_ARTIFACTS (kept), or a fresh temp directory removed at exit. */
const ARTIFACTS = artifactsDir('iogate-clients-');

/** How a panel row shows its state: a DI's text, an output's flipswitch value. */
const outputValue = (page: Page, dev: string, circuit: string) => page.locator(`#unipi_${dev}_${circuit}_value`).inputValue();

for (const site of ['evok', 'iogate'] as const) {
  const siteName = site === 'evok' ? "EVOK's nginx-site.conf" : 'deploy/nginx-iogate.conf';
  describe(`EVOK's web panel through nginx with ${siteName}`, { skip }, () => {
    let rig: Rig;
    let browser: LaunchedBrowser;
    let page: Page;
    let pageErrors: string[] = [];
    let frames: Array<{ text: boolean }> = [];
    let restAllLoads = (): number => 0;

    before(async () => {
      rig = await startRig(site);
      browser = await launchChromium();
      const panel = await openEvokPanel(browser, `${rig.nginx.baseUrl}/`);
      ({ page, errors: pageErrors, frames } = panel);
      restAllLoads = panel.restAllLoads;
    });

    after(async () => {
      await browser?.close();
      await rig?.stop();
    });

    test('the device list renders: inputs, outputs, relays, LEDs and analog values', async () => {
      for (const id of ['unipi_di_1_01_li', 'unipi_do_1_01_li', 'unipi_ro_2_01_li', 'unipi_led_1_01_li', 'unipi_ai_1_01_li', 'unipi_ao_1_01_li']) {
        await page.locator(`#${id}`).waitFor({ state: 'attached', timeout: 10_000 });
      }
      assert.equal(await page.locator('[id^="unipi_di_1_"][id$="_li"]').count(), 4);
      assert.equal(await page.locator('[id^="unipi_ro_2_"][id$="_li"]').count(), 8);
      assert.deepEqual(pageErrors, []);
    });

    test("clicking an output's switch switches it in iogate", async () => {
      // The panel binds its final click handler once the WebSocket is open and /rest/all came a second time.
      await eventually(() => restAllLoads() >= 2, 'the panel reloading /rest/all when its WebSocket opened', 10_000);
      assert.equal((await rig.device('ro', '2_02')).value, 0);
      await page.locator('a[href="#outputs"]').click();
      await page.locator('#unipi_ro_2_02_li .ui-flipswitch').click();
      await eventually(async () => (await rig.device('ro', '2_02')).value === 1, 'relay 2_02 switched on by the click');
      await page.locator('#unipi_ro_2_02_li .ui-flipswitch').click();
      await eventually(async () => (await rig.device('ro', '2_02')).value === 0, 'relay 2_02 switched off by the second click');
      assert.deepEqual(pageErrors, []);
    });

    test('an input moved on the board shows within one second', async (t) => {
      const ms = await inputShownWithinASecond(page, (index, on) => rig.setInput(index, on));
      t.diagnostic(`input shown after ${ms} ms`);
      assert.deepEqual(pageErrors, []);
    });

    test('an output switched with curl shows within one second', async () => {
      assert.equal(await outputValue(page, 'do', '1_03'), '0');
      await run('curl', ['-sS', '-X', 'POST', '-d', 'value=1', `${rig.daemon.apiUrl}/rest/do/1_03`]);
      await eventually(async () => (await outputValue(page, 'do', '1_03')) === '1', 'DO 1_03 shown on', 1000);
      await run('curl', ['-sS', '-X', 'POST', '-H', 'Content-Type: application/json', '-d', '{"value":0}', `${rig.nginx.baseUrl}/json/do/1_03`]);
      await eventually(async () => (await outputValue(page, 'do', '1_03')) === '0', 'DO 1_03 shown off (written through nginx)', 1000);
      assert.deepEqual(pageErrors, []);
    });

    test('every WebSocket frame the page got was a text frame; a screenshot is saved', async () => {
      assert.ok(frames.length >= 4, `${frames.length} frames`);
      assert.ok(frames.every((frame) => frame.text));
      await rig.setInput(0, true);
      await eventually(async () => (await diText(page, '1_01')) === 'On', 'DI 1_01 shown On', 1000);
      await run('curl', ['-sS', '-X', 'POST', '-d', 'value=1', `${rig.nginx.baseUrl}/rest/ro/2_05`]);
      await eventually(async () => (await outputValue(page, 'ro', '2_05')) === '1', 'RO 2_05 shown on', 1000);
      for (const tab of ['outputs', 'inputs']) {
        await page.locator(`a[href="#${tab}"]`).click();
        const path = join(ARTIFACTS, `evok-panel-${site}-site-${tab}.png`);
        await page.screenshot({ path, fullPage: true });
        process.stderr.write(`screenshot: ${path}\n`);
      }
      assert.deepEqual(pageErrors, [], 'no page error during the whole session');
      assert.equal(rig.nginx.errors().match(/\[(error|crit|alert|emerg)\]/g), null, rig.nginx.errors());
    });
  });
}
