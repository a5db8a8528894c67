import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { relayAtSimulator } from '../helpers/brain-relay-sim.js';
import { browserMissing, launchChromium, type LaunchedBrowser } from '../helpers/browser.js';
import type { RunningNginx } from '../helpers/nginx.js';
import { artifactsDir } from '../helpers/temp-dir.js';
import { TestPki } from '../helpers/test-pki.js';
import { clientsMissing, diText, eventually, inputShownWithinASecond, openEvokPanel, startTlsRig, type TlsRig } from './rig.js';

// EVOK's own web panel (evok-web-jq, unmodified) in headless Chromium, served
// by nginx with deploy/nginx-iogate-tls.conf in front of iogate's TLS port:
// nginx proxies the API and upgrades the WebSocket to wss:// upstream, with
// iogate's self-signed certificate verified (proxy_ssl_verify on), and adds
// the token iogate asks for (loopback_anonymous: false, as when nginx is on
// another machine). Outputs are judged at the simulated board. nginx trusting
// another CA, or expecting another name, must leave the panel with nothing.

const skip = clientsMissing() ?? browserMissing();

/** Where screenshots go: IOGATE_CLIENTS_ARTIFACTS (kept), or a fresh temp directory removed at exit. */
const ARTIFACTS = artifactsDir('iogate-clients-');


/** Status of an HTTPS GET straight to iogate, trusting its certificate, with `token` if given. */
function directStatus(rig: TlsRig, path: string, token?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const headers = token === undefined ? {} : { Authorization: `Bearer ${token}` };
    const req = request({ host: '127.0.0.1', port: rig.daemon.port, servername: 'localhost', path, ca: readFileSync(rig.certFile), headers, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
    });
    req.on('error', reject);
    req.end();
  });
}

describe("EVOK's web panel through nginx in front of iogate's TLS port (deploy/nginx-iogate-tls.conf)", { skip }, () => {
  let rig: TlsRig;
  let nginx: RunningNginx;
  let browser: LaunchedBrowser;
  let page: Page;
  let pageErrors: string[] = [];
  let frames: Array<{ text: boolean }> = [];
  let sockets: string[] = [];
  let restAllLoads = (): number => 0;

  before(async () => {
    rig = await startTlsRig();
    nginx = await rig.nginx(rig.certFile);
    browser = await launchChromium();
    const panel = await openEvokPanel(browser, `${nginx.baseUrl}/`);
    ({ page, errors: pageErrors, frames, sockets } = panel);
    restAllLoads = panel.restAllLoads;
  });

  after(async () => {
    await browser?.close();
    await rig?.stop();
  });

  test('iogate itself refuses the panel\'s read without the token nginx adds', async () => {
    assert.equal(await directStatus(rig, '/rest/all'), 401);
    assert.equal(await directStatus(rig, '/rest/all', rig.token), 200);
  });

  test('the device list renders from /rest/all fetched over the verified TLS upstream', async () => {
    for (const id of ['unipi_di_1_01_li', 'unipi_do_1_01_li', 'unipi_ro_2_01_li', 'unipi_ai_1_01_li']) {
      await page.locator(`#${id}`).waitFor({ state: 'attached', timeout: 10_000 });
    }
    assert.equal(await page.locator('[id^="unipi_ro_2_"][id$="_li"]').count(), 8);
    assert.deepEqual(pageErrors, []);
  });

  test('the WebSocket goes through nginx (wss:// to iogate): an input moved on the board shows within one second', async (t) => {
    await eventually(() => restAllLoads() >= 2, 'the panel reloading /rest/all when its WebSocket opened', 10_000);
    // The page speaks ws:// to nginx; iogate's port speaks only TLS, so nginx's side is wss://.
    assert.deepEqual(sockets, [`ws://127.0.0.1:${nginx.port}/ws`]);
    const ms = await inputShownWithinASecond(page, (index, on) => rig.setInput(index, on));
    t.diagnostic(`input shown after ${ms} ms`);
    assert.ok(frames.length >= 2 && frames.every((frame) => frame.text), `${frames.length} frames, all text`);
    assert.deepEqual(pageErrors, []);
  });

  test("clicking a relay's switch switches the relay at the simulated board", async () => {
    assert.equal(await relayAtSimulator(rig.sim, 1), false);
    await page.locator('a[href="#outputs"]').click();
    await page.locator('#unipi_ro_2_02_li .ui-flipswitch').click();
    await eventually(() => relayAtSimulator(rig.sim, 1), 'relay 2_02 on at the board after the click');
    // The panel shows what iogate pushed back over the WebSocket.
    await eventually(async () => (await page.locator('#unipi_ro_2_02_value').inputValue()) === '1', 'RO 2_02 shown on', 1000);
    await page.locator('#unipi_ro_2_02_li .ui-flipswitch').click();
    await eventually(async () => !(await relayAtSimulator(rig.sim, 1)), 'relay 2_02 off at the board after the second click');
    await page.locator('#unipi_ro_2_02_li .ui-flipswitch').click();
    await eventually(() => relayAtSimulator(rig.sim, 1), 'relay 2_02 on again, left on for the screenshot');
    assert.deepEqual(pageErrors, []);
  });

  test('a screenshot is saved; no page error, nothing in nginx\'s error log', async () => {
    await rig.setInput(0, true);
    await eventually(async () => (await diText(page, '1_01')) === 'On', 'DI 1_01 shown On', 1000);
    for (const tab of ['outputs', 'inputs']) {
      await page.locator(`a[href="#${tab}"]`).click();
      const path = join(ARTIFACTS, `evok-panel-tls-${tab}.png`);
      await page.screenshot({ path, fullPage: true });
      process.stderr.write(`screenshot: ${path}\n`);
    }
    assert.deepEqual(pageErrors, [], 'no page error during the whole session');
    assert.equal(nginx.errors().match(/\[(error|crit|alert|emerg)\]/g), null, nginx.errors());
  });

  for (const broken of ['trusting another CA', 'expecting another name'] as const) {
    test(`nginx ${broken}: the handshake fails, the panel gets 502 and shows no device`, async () => {
      const wrong = broken === 'trusting another CA' ? await rig.nginx(TestPki.create('wrong').caFile) : await rig.nginx(rig.certFile, 'plc.invalid');
      const statuses: number[] = [];
      const context = await browser.context();
      try {
        const other = await context.newPage();
        other.on('response', (response) => {
          if (new URL(response.url()).pathname === '/rest/all') statuses.push(response.status());
        });
        await other.goto(`${wrong.baseUrl}/`, { waitUntil: 'load' });
        await eventually(() => statuses.length > 0, '/rest/all answered', 10_000);
        assert.ok(statuses.every((status) => status === 502), `/rest/all answered ${statuses.join(', ')}`);
        assert.equal(await other.locator('[id^="unipi_ro_2_"][id$="_li"]').count(), 0);
        assert.match(wrong.errors(), /upstream SSL certificate (verify error|does not match)/);
      } finally {
        await context.close();
        await wrong.stop();
      }
    });
  }
});
