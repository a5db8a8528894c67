import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { browserMissing, launchChromium, type LaunchedBrowser } from '../helpers/browser.js';
import { clientsMissing, eventually, openEvokPanel, startRig, type Rig } from './rig.js';

// EVOK's own web panel through nginx, and curl, while a local program holds
// far more idle keep-alive connections than iogate gives one address. On
// loopback every local client shares that address: nginx's connections to
// iogate and curl's are parked (see docs/security.md, parking lot) and must
// work as any other: pages, form writes, the WebSocket upgrade and its live
// frames. The flood's own connections are answered and none is let go.

const skip = clientsMissing() ?? browserMissing();
const run = promisify(execFile);
/** Three times the default max_connections_per_address (128). */
const FLOOD = 384;

async function metric(baseUrl: string, name: string): Promise<number> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  const match = new RegExp(`^${name} (\\d+)$`, 'm').exec(text);
  assert.ok(match, `${name} in /metrics`);
  return Number(match[1]);
}

describe("EVOK's web panel and curl while idle keep-alive connections from loopback hold iogate's slots", { skip }, () => {
  let rig: Rig;
  let browser: LaunchedBrowser;
  let page: Page;
  const flood: Socket[] = [];
  let pageErrors: string[] = [];
  let frames: Array<{ text: boolean }> = [];
  let restAllLoads = (): number => 0;
  let parkedRequestsBefore = 0;
  let refresh: NodeJS.Timeout | undefined;

  before(async () => {
    rig = await startRig('iogate');
    const port = Number(new URL(rig.daemon.baseUrl).port);
    const answered: Promise<unknown>[] = [];
    for (let i = 0; i < FLOOD; i++) {
      const socket = connect({ port, host: '127.0.0.1' });
      socket.on('error', () => undefined);
      await once(socket, 'connect');
      socket.resume();
      answered.push(once(socket, 'data'));
      socket.write('GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
      flood.push(socket);
    }
    await Promise.all(answered);
    // As a poller keeps its connections: a request on each every second, well within the keep-alive timeout.
    refresh = setInterval(() => {
      for (const socket of flood) socket.write('GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    }, 1000);
    assert.ok((await metric(rig.daemon.baseUrl, 'iogate_http_parked_connections')) >= FLOOD - 128, 'the flood beyond the address slots is parked');
    parkedRequestsBefore = await metric(rig.daemon.baseUrl, 'iogate_http_parked_requests_total');

    browser = await launchChromium();
    const panel = await openEvokPanel(browser, `${rig.nginx.baseUrl}/`);
    ({ page, errors: pageErrors, frames } = panel);
    restAllLoads = panel.restAllLoads;
  });

  after(async () => {
    clearInterval(refresh);
    for (const socket of flood) socket.destroy();
    await browser?.close();
    await rig?.stop();
  });

  test('the panel renders, a click switches a relay, a moved input shows within a second', async () => {
    await page.locator('#unipi_ro_2_01_li').waitFor({ state: 'attached', timeout: 10_000 });
    await eventually(() => restAllLoads() >= 2, 'the panel reloading /rest/all when its WebSocket opened', 10_000);
    await page.locator('a[href="#outputs"]').click();
    await page.locator('#unipi_ro_2_02_li .ui-flipswitch').click();
    await eventually(async () => (await rig.device('ro', '2_02')).value === 1, 'relay 2_02 switched on by the click');
    await page.locator('a[href="#inputs"]').click();
    await rig.setInput(2, true);
    await eventually(async () => (await page.locator('#unipi_di_1_03_value').textContent()) === 'On', 'DI 1_03 shown On', 1000);
    assert.ok(frames.length >= 2 && frames.every((frame) => frame.text), `${frames.length} frames, all text`);
    assert.deepEqual(pageErrors, []);
  });

  test('curl writes directly and through nginx', async () => {
    const direct = JSON.parse((await run('curl', ['-sS', '-X', 'POST', '-d', 'value=1', `${rig.daemon.baseUrl}/rest/do/1_03`])).stdout);
    assert.deepEqual([direct.success, direct.result.value], [true, 1]);
    const proxied = JSON.parse(
      (await run('curl', ['-sS', '-X', 'POST', '-H', 'Content-Type: application/json', '-d', '{"value":0}', `${rig.nginx.baseUrl}/json/do/1_03`])).stdout,
    );
    assert.equal(proxied.success, true);
    assert.equal((await rig.device('do', '1_03')).value, 0);
  });

  test('those requests went through the parking lot, and no connection of the flood was let go', async () => {
    assert.ok((await metric(rig.daemon.baseUrl, 'iogate_http_parked_requests_total')) > parkedRequestsBefore + 4);
    assert.equal(await metric(rig.daemon.baseUrl, 'iogate_http_evicted_total'), 0);
    assert.equal(flood.filter((socket) => socket.destroyed).length, 0);
    assert.equal(rig.nginx.errors().match(/\[(error|crit|alert|emerg)\]/g), null, rig.nginx.errors());
  });
});
