import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { hashPassword } from '../../src/api/access/password-hash.js';
import { browserMissing, launchChromium, seriousAxeViolations, type LaunchedBrowser } from '../helpers/browser.js';
import { SIMULATED_BUS, configFile, httpCall } from '../helpers/http-call.js';
import { spawnDaemon, type SpawnedDaemon } from '../helpers/spawn-daemon.js';
import { artifactsDir } from '../helpers/temp-dir.js';

// Panel users in Debian's Chromium: the panel asks for a login, refuses a
// wrong password, shows the outputs once logged in (live over the WebSocket,
// which the session cookie opens too), gives an admin the audit view, logs
// out, and stays axe-clean throughout.

const skip = browserMissing();

describe('panel users in Chromium', { skip }, () => {
  let chromium: LaunchedBrowser;
  let daemon: SpawnedDaemon;
  const shots = artifactsDir('iogate-panel-users-');
  const errors: string[] = [];

  before(async () => {
    chromium = await launchChromium();
    const { dir, file } = configFile(
      [
        'apis:',
        '  websocket: {enabled: true}',
        '  auth:',
        '    loopback_anonymous: false',
        '    users:',
        `      - {name: anna, password_hash: "${hashPassword('anna-pass', { n: 1024 })}", scope: admin}`,
        `      - {name: vera, password_hash: "${hashPassword('vera-pass', { n: 1024 })}", scope: read}`,
        SIMULATED_BUS,
      ].join('\n'),
      'iogate-panel-users-',
    );
    daemon = await spawnDaemon(['--config', file], { cwd: dir });
  });

  after(async () => {
    await chromium?.close();
    await daemon?.stop();
  });

  async function logIn(page: Page, user: string, password: string): Promise<void> {
    const dialog = page.getByRole('dialog', { name: 'Log in' });
    await dialog.waitFor();
    await dialog.getByLabel('User').fill(user);
    await dialog.getByLabel('Password').fill(password);
    await dialog.getByRole('button', { name: 'Log in' }).click();
  }

  test('login form, wrong password, outputs once logged in, the audit view, logout; axe-clean', async () => {
    // axe is injected as a script, which the panel's CSP rightly forbids: bypass it for this context.
    const context = await chromium.context({ bypassCSP: true, viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    page.on('pageerror', (error) => errors.push(error.message));
    await page.goto(`${daemon.baseUrl}/`);
    const dialog = page.getByRole('dialog', { name: 'Log in' });
    await dialog.waitFor();
    assert.deepEqual(await seriousAxeViolations(page), [], 'login form');
    await page.screenshot({ path: join(shots, 'login.png') });

    await logIn(page, 'anna', 'wrong');
    await dialog.getByRole('alert').filter({ hasText: 'wrong user name or password' }).waitFor();
    await page.screenshot({ path: join(shots, 'login-refused.png') });

    await logIn(page, 'anna', 'anna-pass');
    await dialog.waitFor({ state: 'hidden' });
    await page.waitForSelector('#conn[data-state="live"]', { timeout: 10_000 });
    await page.getByRole('switch', { name: 'do 1_01', exact: true }).waitFor();
    await page.getByText('anna (admin)').waitFor();
    const cookies = await context.cookies();
    assert.equal(cookies.length, 1);
    assert.equal(cookies[0]!.httpOnly, true);
    assert.equal(cookies[0]!.sameSite, 'Strict');
    assert.equal(await page.evaluate(() => document.cookie), '', 'the page cannot read its session');

    await page.getByRole('button', { name: 'Audit log' }).click();
    const table = page.getByRole('table');
    await table.getByRole('row').filter({ hasText: 'auth/login' }).filter({ hasText: 'ok' }).waitFor();
    const first = await table.getByRole('row').nth(1).innerText();
    assert.match(first, /anna.*auth\/login.*ok/s, 'newest first: the successful login heads the list');
    assert.match(await table.getByRole('row').nth(2).innerText(), /refused: 401/);
    assert.deepEqual(await seriousAxeViolations(page), [], 'logged in, audit view open');
    await page.screenshot({ path: join(shots, 'audit-view.png') });

    await page.getByRole('button', { name: 'Log out' }).click();
    await dialog.waitFor();
    assert.equal((await context.cookies()).length, 0);
    await context.close();
    assert.deepEqual(errors, []);
  });

  test('a read-only user sees the outputs but no audit view', async () => {
    const context = await chromium.context({ viewport: { width: 390, height: 844 } });
    const page = await context.newPage();
    await page.goto(`${daemon.baseUrl}/`);
    await logIn(page, 'vera', 'vera-pass');
    await page.getByRole('switch', { name: 'do 1_01', exact: true }).waitFor();
    await page.getByText('vera (read)').waitFor();
    assert.equal(await page.getByRole('button', { name: 'Audit log' }).isVisible(), false);
    await page.screenshot({ path: join(shots, 'read-user-phone.png') });
    process.stderr.write(`panel users screenshots: ${shots}\n`);
    await context.close();
    // The server refuses the audit log to her too, not only the page.
    assert.equal((await httpCall(daemon.baseUrl, '/audit')).status, 401);
  });
});
