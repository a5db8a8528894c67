// Headless Chromium from Debian, driven by playwright-core. The browser is
// the distribution's own (/usr/bin/chromium): no test ever downloads one.
// Suites that need it skip with a reason where it is not installed.
// Playwright gives every launch a fresh temporary profile of its own.
import { existsSync } from 'node:fs';
import type { Browser, BrowserContext } from 'playwright-core';

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

export async function launchChromium(): Promise<LaunchedBrowser> {
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: FLAGS,
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
