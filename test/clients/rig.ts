import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import type { LaunchedBrowser } from '../helpers/browser.js';
import { configFile } from '../helpers/http-call.js';
import { startHttpsDaemon, type HttpsDaemon } from '../helpers/https-daemon.js';
import { nginxMissing, rewrite, startNginx, type RunningNginx } from '../helpers/nginx.js';
import { startBrainRelaySim, brainRelayConfig, setBrainInput } from '../helpers/brain-relay-sim.js';
import type { SimProcess } from '../helpers/sim-process.js';
import { spawnDaemon, type SpawnedDaemon } from '../helpers/spawn-daemon.js';

// What the compatibility suite runs Unipi's own clients against: the built
// daemon, polling a Brain section (1, model 00) and a relay section (2, model
// 01) of the standalone simulator over Modbus TCP, behind nginx as Unipi ships
// EVOK. The simulator's control endpoint lets a test move an input.

/** Unipi's unmodified clients; they are never copied into this repository. */
export const CLIENTS = process.env.IOGATE_EVOK_CLIENTS ?? fileURLToPath(new URL('../../../shared/clients', import.meta.url));
export const PANEL_WWW = `${CLIENTS}/evok-web-jq/www`;
export const EVOK_SITE = `${CLIENTS}/evok-web-jq/nginx-site.conf`;
export const NODE_RED_NODES = `${CLIENTS}/node-red-contrib-unipi-evok`;
/** iogate's own site for nginx, shipped as an example. */
export const IOGATE_SITE = fileURLToPath(new URL('../../deploy/nginx-iogate.conf', import.meta.url));

/** Why the suite cannot run here, or undefined. */
export function clientsMissing(): string | undefined {
  if (!existsSync(PANEL_WWW) || !existsSync(NODE_RED_NODES)) return `Unipi's EVOK clients are not at ${CLIENTS} (a clone on its own); CI has them`;
  return nginxMissing();
}

export interface Rig {
  sim: SimProcess;
  daemon: SpawnedDaemon;
  nginx: RunningNginx;
  /** Sets digital input `index` (0-based) of the Brain section on the simulated board. */
  setInput(index: number, on: boolean): Promise<void>;
  /** An iogate device read directly, not through nginx. */
  device(dev: string, circuit: string): Promise<any>;
  stop(): Promise<void>;
}

/**
 * EVOK's own nginx-site.conf with only the upstream port, the listen port and
 * the paths changed; or, with `site: 'iogate'`, deploy/nginx-iogate.conf the same way.
 */
function siteFor(kind: 'evok' | 'iogate', iogatePort: number, nginxPort: number): string {
  if (kind === 'evok') {
    return rewrite(readFileSync(EVOK_SITE, 'utf8'), [
      ['server 127.0.0.1:8080;', `server 127.0.0.1:${iogatePort};`],
      ['listen 80 default_server;', `listen 127.0.0.1:${nginxPort} default_server;`],
      ['/opt/evok/www', PANEL_WWW],
    ]);
  }
  return rewrite(readFileSync(IOGATE_SITE, 'utf8'), [
    ['server 127.0.0.1:8080;', `server 127.0.0.1:${iogatePort};`],
    ['listen 80 default_server;', `listen 127.0.0.1:${nginxPort} default_server;`],
    ['/opt/evok/www', PANEL_WWW],
  ]);
}

export async function startRig(site: 'evok' | 'iogate'): Promise<Rig> {
  const sim = await startBrainRelaySim();
  let daemon: SpawnedDaemon | undefined;
  try {
    const { dir, file } = configFile(brainRelayConfig(sim.tcpPort!), 'iogate-clients-');
    daemon = await spawnDaemon(['--config', file], { cwd: dir });
    const iogatePort = Number(new URL(daemon.baseUrl).port);
    const nginx = await startNginx((port) => siteFor(site, iogatePort, port));
    const running = daemon;
    return {
      sim,
      daemon: running,
      nginx,
      setInput: (index, on) => setBrainInput(sim, index, on),
      async device(dev, circuit) {
        return (await fetch(`${running.apiUrl}/rest/${dev}/${circuit}`)).json();
      },
      async stop() {
        await nginx.stop();
        await running.stop();
        await sim.stop();
      },
    };
  } catch (error) {
    await daemon?.stop();
    await sim.stop();
    throw error;
  }
}

/** iogate's site for nginx in front of its TLS port, shipped as an example. */
export const IOGATE_TLS_SITE = fileURLToPath(new URL('../../deploy/nginx-iogate-tls.conf', import.meta.url));

/** The rig with iogate serving HTTPS (its own self-signed certificate) and wanting a token even from loopback. */
export interface TlsRig {
  sim: SimProcess;
  daemon: HttpsDaemon;
  /** The certificate iogate made for itself (`apis.tls: {self_signed: true}`). */
  certFile: string;
  /** The write token nginx adds to what it forwards: a browser page cannot send one. */
  token: string;
  setInput(index: number, on: boolean): Promise<void>;
  /**
   * nginx with deploy/nginx-iogate-tls.conf (only ports, paths and the token
   * filled in) in front of the daemon, verifying its certificate against
   * `trusted` for the name `name`; stopped with the rig.
   */
  nginx(trusted: string, name?: string): Promise<RunningNginx>;
  stop(): Promise<void>;
}

/**
 * iogate as a network deployment runs it: HTTPS on its port and
 * `loopback_anonymous: false`, so nginx, although on loopback here, is let in
 * only by the token it adds, as it would be from another machine.
 */
export async function startTlsRig(): Promise<TlsRig> {
  const sim = await startBrainRelaySim();
  const token = randomBytes(32).toString('hex');
  const proxies: RunningNginx[] = [];
  let daemon: HttpsDaemon | undefined;
  try {
    const { dir, file } = configFile(
      brainRelayConfig(sim.tcpPort!, {
        top: ['state_dir: state'],
        apis: ['tls: {self_signed: true}', 'auth:', '  loopback_anonymous: false', '  tokens:', `    - {name: evok-panel-nginx, token: ${token}, scope: write}`],
      }),
      'iogate-clients-tls-',
    );
    daemon = await startHttpsDaemon(file, dir);
    const running = daemon;
    const certFile = join(dir, 'state', 'tls', 'self-signed-cert.pem');
    return {
      sim,
      daemon: running,
      certFile,
      token,
      setInput: (index, on) => setBrainInput(sim, index, on),
      async nginx(trusted, name = 'localhost') {
        const nginx = await startNginx((port) =>
          rewrite(readFileSync(IOGATE_TLS_SITE, 'utf8'), [
            ['server 127.0.0.1:8080;', `server 127.0.0.1:${running.port};`],
            ['listen 80 default_server;', `listen 127.0.0.1:${port} default_server;`],
            ['/opt/evok/www', PANEL_WWW],
            ['/var/lib/iogate/tls/self-signed-cert.pem', trusted],
            ['proxy_ssl_name localhost;', `proxy_ssl_name ${name};`],
            ['PASTE-THE-TOKEN-HERE', token],
          ]),
        );
        proxies.push(nginx);
        return nginx;
      },
      async stop() {
        for (const nginx of proxies) await nginx.stop();
        await running.stop();
        await sim.stop();
      },
    };
  } catch (error) {
    await daemon?.stop();
    await sim.stop();
    throw error;
  }
}

/** Resolves once `check` holds; polls every 20 ms, fails after `limitMs` saying `what`. */
export async function eventually(check: () => Promise<boolean> | boolean, what: string, limitMs = 5000): Promise<number> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > limitMs) throw new Error(`${what}: not within ${limitMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return Date.now() - started;
}

/** The text EVOK's panel shows for DI `circuit` ("On" or "Off"). */
export const diText = (page: Page, circuit: string) => page.locator(`#unipi_di_${circuit}_value`).textContent();

/**
 * DI 1_03 (the Brain section's input 2) moved on, then off, at the simulated board: the panel must
 * show each within a second. Answers how long "On" took.
 */
export async function inputShownWithinASecond(page: Page, setInput: (index: number, on: boolean) => Promise<void>): Promise<number> {
  assert.equal(await diText(page, '1_03'), 'Off');
  await setInput(2, true);
  const ms = await eventually(async () => (await diText(page, '1_03')) === 'On', 'DI 1_03 shown On', 1000);
  await setInput(2, false);
  await eventually(async () => (await diText(page, '1_03')) === 'Off', 'DI 1_03 shown Off again', 1000);
  return ms;
}

/** EVOK's panel open in a page, with what a test asserts on: page errors, WebSocket frames, /rest/all loads. */
export interface PanelPage {
  page: Page;
  errors: string[];
  frames: Array<{ text: boolean }>;
  /** The URL of every WebSocket the page opened. */
  sockets: string[];
  restAllLoads(): number;
}

export async function openEvokPanel(browser: LaunchedBrowser, url: string): Promise<PanelPage> {
  const context = await browser.context({ viewport: { width: 1000, height: 1400 } });
  const page = await context.newPage();
  const errors: string[] = [];
  const frames: Array<{ text: boolean }> = [];
  const sockets: string[] = [];
  let restAllLoads = 0;
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(`console: ${message.text()}`);
  });
  page.on('response', (response) => {
    if (new URL(response.url()).pathname === '/rest/all' && response.status() === 200) restAllLoads++;
  });
  page.on('websocket', (socket) => {
    sockets.push(socket.url());
    socket.on('framereceived', ({ payload }) => frames.push({ text: typeof payload === 'string' }));
  });
  await page.goto(url, { waitUntil: 'load' });
  return { page, errors, frames, sockets, restAllLoads: () => restAllLoads };
}
