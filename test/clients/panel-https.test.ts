import assert from 'node:assert/strict';
import { X509Certificate, createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { hashPassword } from '../../src/api/access/password-hash.js';
import { browserMissing, launchChromium, seriousAxeViolations, type LaunchedBrowser } from '../helpers/browser.js';
import { SIMULATED_BUS, configFile } from '../helpers/http-call.js';
import { startHttpsDaemon, type HttpsDaemon } from '../helpers/https-daemon.js';
import { artifactsDir } from '../helpers/temp-dir.js';

// The panel over HTTPS on iogate's own port, with the certificate iogate made
// itself (`self_signed: true`), in Debian's Chromium. Chromium trusts exactly
// that certificate's key (pinned by its SPKI hash), never "any certificate":
// a wrong or changed certificate still fails. The panel loads, logs a user in
// (the session cookie carries Secure over TLS), goes live over WSS, and is
// axe-clean.

const skip = browserMissing();

describe('the panel over HTTPS with a self-signed certificate', { skip }, () => {
  let chromium: LaunchedBrowser;
  let daemon: HttpsDaemon;
  const shots = artifactsDir('iogate-panel-https-');

  before(async () => {
    const { dir, file } = configFile(
      [
        'state_dir: state',
        'apis:',
        '  tls: {self_signed: true}',
        '  websocket: {enabled: true}',
        '  auth:',
        '    loopback_anonymous: false',
        '    users:',
        `      - {name: anna, password_hash: "${hashPassword('anna-pass', { n: 1024 })}", scope: admin}`,
        SIMULATED_BUS,
      ].join('\n'),
      'iogate-panel-https-',
    );
    daemon = await startHttpsDaemon(file, dir);
    const certificate = new X509Certificate(readFileSync(join(dir, 'state', 'tls', 'self-signed-cert.pem')));
    const spki = createHash('sha256').update(certificate.publicKey.export({ type: 'spki', format: 'der' })).digest('base64');
    chromium = await launchChromium([`--ignore-certificate-errors-spki-list=${spki}`]);
  });

  after(async () => {
    await chromium?.close();
    await daemon?.stop();
  });

  test('loads, logs in with a Secure session cookie, goes live over WSS; axe-clean', async () => {
    const context = await chromium.context({ bypassCSP: true, viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    const sockets: string[] = [];
    page.on('websocket', (socket) => sockets.push(socket.url()));
    const response = await page.goto(`https://localhost:${daemon.port}/`);
    assert.equal(response?.status(), 200);
    const security = await response!.securityDetails();
    assert.match(String(security?.protocol), /TLS 1\.[23]/);
    const dialog = page.getByRole('dialog', { name: 'Log in' });
    await dialog.waitFor();
    await dialog.getByLabel('User').fill('anna');
    await dialog.getByLabel('Password').fill('anna-pass');
    await dialog.getByRole('button', { name: 'Log in' }).click();
    await dialog.waitFor({ state: 'hidden' });
    await page.waitForSelector('#conn[data-state="live"]', { timeout: 15_000 });
    await page.getByRole('switch', { name: 'do 1_01', exact: true }).waitFor();
    const cookies = await context.cookies();
    assert.equal(cookies.length, 1);
    assert.equal(cookies[0]!.secure, true, 'over TLS the session cookie is Secure');
    assert.equal(cookies[0]!.httpOnly, true);
    assert.equal(cookies[0]!.sameSite, 'Strict');
    assert.ok(sockets.some((url) => url.startsWith(`wss://localhost:${daemon.port}/`)), `WebSockets: ${sockets.join(', ')}`);
    assert.deepEqual(await seriousAxeViolations(page), []);
    await page.screenshot({ path: join(shots, 'panel-https.png') });
    process.stderr.write(`panel over HTTPS screenshot: ${join(shots, 'panel-https.png')}\n`);
    await context.close();
    assert.deepEqual(errors, []);
  });

  test('a certificate Chromium was not told to trust is refused', async () => {
    const other = await launchChromium();
    try {
      const page = await (await other.context()).newPage();
      await assert.rejects(page.goto(`https://localhost:${daemon.port}/`), /ERR_CERT/);
    } finally {
      await other.close();
    }
  });
});
