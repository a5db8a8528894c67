// Headless Chromium from Debian, driven by playwright-core. The browser is
// the distribution's own (/usr/bin/chromium): no test ever downloads one.
// Suites that need it skip with a reason where it is not installed.
// Playwright gives every launch a fresh temporary profile of its own.
import { existsSync } from 'node:fs';
import type { Browser, BrowserContext, Page } from 'playwright-core';

export const CHROMIUM = process.env.IOGATE_CHROMIUM ?? '/usr/bin/chromium';

/** Why browser tests cannot run here, or undefined when they can. */
export function browserMissing(): string | undefined {
  return existsSync(CHROMIUM) ? undefined : `${CHROMIUM} not installed (apt-get install chromium)`;
}

// The machine's network is closed: without these flags Chromium keeps
// trying to reach its own services at start and in the background.
const FLAGS = [
  '--headless=new', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
  '--disable-dev-shm-usage',
];

export interface LaunchedBrowser {
  browser: Browser;
  /** A fresh context (own cookies and storage), optionally with a colour scheme and viewport. */
  context(options?: Parameters<Browser['newContext']>[0]): Promise<BrowserContext>;
  close(): Promise<void>;
}

/** `extraArgs`: more Chromium switches, e.g. a pinned certificate key for a test's self-signed HTTPS. */
export async function launchChromium(extraArgs: string[] = []): Promise<LaunchedBrowser> {
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [...FLAGS, ...extraArgs],
    timeout: 30_000,
  });
  return {
    browser,
    context: (options) => browser.newContext(options),
    close: async () => {
      await browser.close().catch(() => undefined);
    },
  };
}

/** Console errors and uncaught exceptions of a page, collected from the start. */
export function watchErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(message.text());
  });
  page.on('pageerror', (error) => errors.push(error.message));
  return errors;
}

/** iogate's panel at `baseUrl` in a new page of `context`, once it is live over the WebSocket; its errors collected from the start. */
export async function openPanel(context: BrowserContext, baseUrl: string): Promise<{ page: Page; errors: string[] }> {
  const page = await context.newPage();
  const errors = watchErrors(page);
  await page.goto(`${baseUrl}/`);
  await page.waitForSelector('#conn[data-state="live"]', { timeout: 10_000 });
  return { page, errors };
}

const AXE = new URL('../../node_modules/axe-core/axe.min.js', import.meta.url);

/**
 * axe-core's serious and critical findings on a page. axe is injected as a
 * script, which the panel's CSP rightly forbids: open the page in a context
 * with `bypassCSP: true`, for the audit only.
 */
export async function seriousAxeViolations(page: import('playwright-core').Page): Promise<Array<{ id: string; impact: string; nodes: unknown[] }>> {
  const { fileURLToPath } = await import('node:url');
  await page.addScriptTag({ path: fileURLToPath(AXE) });
  const violations = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(): Promise<{ violations: { id: string; impact: string; nodes: { target: unknown }[] }[] }> } }).axe;
    const result = await axe.run();
    return result.violations.map((violation) => ({ id: violation.id, impact: violation.impact, nodes: violation.nodes.slice(0, 3).map((node) => node.target) }));
  });
  return violations.filter((violation) => violation.impact === 'serious' || violation.impact === 'critical');
}
