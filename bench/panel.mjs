// `node bench/panel.mjs` (after `npm run build`): the built-in panel in
// Debian's Chromium (playwright-core, /usr/bin/chromium).
//
// 1. Render: the built daemon with bench/config.yaml (530 devices); time from
//    navigation start to the full list in the document (the page's own
//    `iogate-rendered` mark) and to the frame that shows it. Median of 7 loads.
// 2. Updates: a stand-in server serves the same page and device list and
//    feeds its /ws with pushes at rising rates (batches every 10 ms, as a
//    scan would). At each rate the page must keep up: after the feed stops, the
//    last values show within 100 ms, frames keep coming, and only the cards of
//    changed devices are touched (a MutationObserver counts them).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { WebSocketServer } from 'ws';
import { chromium } from 'playwright-core';
import { tempDir } from './common.mjs';

const BUNDLE = fileURLToPath(new URL('../dist/iogate.js', import.meta.url));
const BENCH_CONFIG = fileURLToPath(new URL('./config.yaml', import.meta.url));
const CHROMIUM = process.env.IOGATE_CHROMIUM ?? '/usr/bin/chromium';
const FLAGS = ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'];
const LOADS = 7;
const RATES = [1000, 2000, 5000, 10000, 20000, 40000];
const STEP_MS = 3000;
const BATCH_MS = 10;
const CAUGHT_UP_MS = 100;

/** With bench/config.yaml (530 devices), or the built-in one-board configuration (57) as the baseline. */
async function startDaemon({ builtIn = false } = {}) {
  const dir = tempDir('iogate-bench-panel-');
  const file = join(dir, 'config.yaml');
  writeFileSync(file, `alias_file: ${join(dir, 'alias.yaml')}\napis:\n  websocket:\n    enabled: true\n${readFileSync(BENCH_CONFIG, 'utf8')}`);
  const args = builtIn ? [] : ['--config', file];
  const child = spawn(process.execPath, [BUNDLE, ...args, '--port', '0'], { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  let output = '';
  child.stderr.setEncoding('utf8');
  const baseUrl = await new Promise((resolve, reject) => {
    child.stderr.on('data', (chunk) => {
      output += chunk;
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match) resolve(match[1]);
    });
    child.once('exit', (code) => reject(new Error(`daemon exited with ${code}: ${output}`)));
  });
  return { baseUrl, stop: async () => { child.kill('SIGTERM'); await once(child, 'exit'); } };
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

async function measureRender(browser, baseUrl) {
  const renders = [];
  const paints = [];
  let devices = 0;
  // One load more than measured: the first warms up the browser and the daemon.
  for (let i = 0; i <= LOADS; i++) {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    // Timed inside the page: the frame after the list went in, not when the
    // benchmark happened to look.
    // (A PerformanceObserver would be told late, in a low-priority task; so the
    // mark call itself is watched.)
    await page.addInitScript(() => {
      const mark = performance.mark.bind(performance);
      performance.mark = (name, options) => {
        if (name === 'iogate-rendered') requestAnimationFrame(() => setTimeout(() => (window.__painted = performance.now()), 0));
        return mark(name, options);
      };
    });
    await page.goto(`${baseUrl}/`);
    await page.waitForFunction(() => window.__painted !== undefined);
    const result = await page.evaluate(() => ({
      rendered: performance.getEntriesByName('iogate-rendered')[0].startTime,
      painted: window.__painted,
      cards: document.querySelectorAll('article.dev').length,
    }));
    if (i > 0) {
      renders.push(result.rendered);
      paints.push(result.painted);
    }
    devices = result.cards;
    await context.close();
  }
  return { devices, renderMs: median(renders), paintedMs: median(paints), renders };
}

/** Serves the daemon's page and device list, and a /ws the benchmark drives. */
async function startFeedServer(page, devices) {
  const server = createServer((req, res) => {
    if (req.url === '/') {
      res.writeHead(200, page.headers);
      res.end(page.body);
    } else if (req.url === '/rest/all') {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(devices));
    } else {
      res.writeHead(404, { 'Content-Type': 'application/json' });
      res.end('{"success":false,"errors":{"NotFound":"no"}}');
    }
  });
  const wss = new WebSocketServer({ server, path: '/ws' });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const clients = new Set();
  wss.on('connection', (ws) => {
    clients.add(ws);
    ws.on('close', () => clients.delete(ws));
  });
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    clients,
    close: () => new Promise((resolve) => { for (const ws of clients) ws.terminate(); wss.close(); server.close(() => resolve()); }),
  };
}

async function measureUpdates(browser, daemonUrl) {
  const pageReply = await fetch(`${daemonUrl}/`);
  // fetch has decoded the page (the daemon sends it compressed): its encoding and length headers no longer apply.
  const dropped = ['connection', 'keep-alive', 'date', 'transfer-encoding', 'content-encoding', 'content-length', 'etag'];
  const page = { headers: Object.fromEntries([...pageReply.headers].filter(([name]) => !dropped.includes(name))), body: await pageReply.text() };
  const devices = await (await fetch(`${daemonUrl}/rest/all`)).json();
  // The fed devices: every digital input (value and counter change), the rest stay still.
  const fed = devices.filter((device) => device.dev === 'di');
  const feed = await startFeedServer(page, devices);
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const tab = await context.newPage();
  await tab.goto(`${feed.url}/`);
  await tab.waitForSelector('#conn[data-state="live"]');
  const fedKeys = fed.map((device) => `di/${device.circuit}`);
  await tab.evaluate((keys) => {
    const fedSet = new Set(keys);
    const state = { touched: new Set(), outside: 0, frames: 0 };
    window.__bench = state;
    new MutationObserver((records) => {
      for (const record of records) {
        const node = record.target.nodeType === 1 ? record.target : record.target.parentElement;
        const card = node?.closest('article.dev');
        if (!card) continue;
        const key = card.getAttribute('data-key');
        state.touched.add(key);
        if (!fedSet.has(key)) state.outside++;
      }
    }).observe(document.getElementById('boards'), { subtree: true, childList: true, characterData: true, attributes: true });
    const frame = () => { state.frames++; requestAnimationFrame(frame); };
    requestAnimationFrame(frame);
  }, fedKeys);

  const ws = [...feed.clients][0];
  let sequence = 0;
  const results = [];
  for (const rate of RATES) {
    const perBatch = Math.max(1, Math.round((rate * BATCH_MS) / 1000));
    let next = 0;
    let sent = 0;
    const before = await tab.evaluate(() => ({ frames: window.__bench.frames, outside: window.__bench.outside, at: performance.now() }));
    const started = performance.now();
    while (performance.now() - started < STEP_MS) {
      const batch = [];
      for (let i = 0; i < perBatch; i++) {
        const device = fed[next];
        next = (next + 1) % fed.length;
        sequence++;
        device.value = sequence & 1;
        device.counter = sequence;
        batch.push(device);
      }
      ws.send(JSON.stringify(batch));
      sent += batch.length;
      // Pace on the wall clock so a slow send does not lower the rate unseen.
      const due = started + ((sent / perBatch) * BATCH_MS);
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
    }
    const elapsed = performance.now() - started;
    // Caught up: every fed device shows its last counter within CAUGHT_UP_MS of the feed stopping.
    const expected = Object.fromEntries(fed.map((device) => [`di/${device.circuit}`, `counter ${device.counter}`]));
    const stoppedAt = Date.now();
    const caughtUpMs = await tab.evaluate(({ expected, limit }) => new Promise((resolve) => {
      const start = performance.now();
      const check = () => {
        const behind = Object.entries(expected).some(([key, text]) => !document.querySelector(`[data-key="${key}"] .val`)?.textContent?.endsWith(text));
        const waited = performance.now() - start;
        if (!behind) resolve(waited);
        else if (waited > limit * 20) resolve(Infinity);
        else requestAnimationFrame(check);
      };
      check();
    }), { expected, limit: CAUGHT_UP_MS });
    const after = await tab.evaluate(() => ({ frames: window.__bench.frames, outside: window.__bench.outside, at: performance.now() }));
    const fps = ((after.frames - before.frames) * 1000) / (after.at - before.at);
    results.push({
      rate: Math.round((sent * 1000) / elapsed),
      caughtUpMs: Number.isFinite(caughtUpMs) ? Math.round(caughtUpMs) : null,
      fps: Math.round(fps),
      outsideTouches: after.outside - before.outside,
      kept: Number.isFinite(caughtUpMs) && caughtUpMs <= CAUGHT_UP_MS && fps >= 20,
      wallMs: Date.now() - stoppedAt,
    });
  }
  const touched = await tab.evaluate(() => window.__bench.touched.size);
  await context.close();
  await feed.close();
  return { fedDevices: fed.length, totalDevices: devices.length, touchedCards: touched, results };
}

const browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
// Baseline in the same run: the same page with the built-in board (57 devices),
// so a busy machine shows up in both figures and the ratio stays meaningful.
const small = await startDaemon({ builtIn: true });
const baseline = await measureRender(browser, small.baseUrl);
await small.stop();
const daemon = await startDaemon();
try {
  const render = await measureRender(browser, daemon.baseUrl);
  console.log(`machine: ${cpus().length} cores, load average ${loadavg().map((n) => n.toFixed(1)).join(' ')}`);
  console.log(`render baseline: ${baseline.devices} devices, in the document after ${baseline.renderMs.toFixed(0)} ms, painted after ${baseline.paintedMs.toFixed(0)} ms (median of ${LOADS})`);
  console.log(`render: ${render.devices} devices, list in the document after ${render.renderMs.toFixed(0)} ms (median of ${LOADS}; all: ${render.renders.map((ms) => ms.toFixed(0)).join(', ')}), painted after ${render.paintedMs.toFixed(0)} ms (${(render.paintedMs / baseline.paintedMs).toFixed(2)}x the baseline); target <= 500 ms: ${render.paintedMs <= 500 ? 'pass' : 'miss'}`);
  const updates = await measureUpdates(browser, daemon.baseUrl);
  console.log(`updates: ${updates.fedDevices} of ${updates.totalDevices} devices fed; cards ever touched: ${updates.touchedCards}`);
  console.log('| updates/s sent | caught up after stop | frames/s | cards touched outside the fed set | kept up |');
  console.log('| ---: | ---: | ---: | ---: | --- |');
  for (const row of updates.results) {
    console.log(`| ${row.rate.toLocaleString('en')} | ${row.caughtUpMs === null ? 'no' : `${row.caughtUpMs} ms`} | ${row.fps} | ${row.outsideTouches} | ${row.kept ? 'yes' : 'no'} |`);
  }
  const best = Math.max(0, ...updates.results.filter((row) => row.kept).map((row) => row.rate));
  console.log(`highest rate kept up with: ${best.toLocaleString('en')} updates/s; target >= 1,000: ${best >= 1000 ? 'pass' : 'miss'}`);
} finally {
  await browser.close();
  await daemon.stop();
}
