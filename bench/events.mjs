// Change-event benchmark: how long an input change on the simulated board
// takes to reach WebSocket clients (p50/p99, with 1 and with 100 clients),
// and how many events one client can take in per second.
//
//   node --import tsx bench/events.mjs
//   BENCH_INPUT_HZ=200 node --import tsx bench/events.mjs   (with input_scan_frequency: 200)
//
// The daemon's parts run in this thread exactly as main.ts assembles them (so
// the bench can flip a simulated input at a known instant); the clients run in
// a worker thread with their own event loop, as separate processes would.
// Latency includes the wait for the next scan, so its floor is 0 and its
// ceiling one scan period; the target is p99 ≤ one scan period + 2 ms. It is
// also split at the moment the change feed publishes: "poll" is the wait for
// the scan (plus any stall of the event loop), "push" is feed → client, and
// "send loop" the part of push spent handing the change to every socket.

import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { tempDir } from './common.mjs';

const now = () => performance.timeOrigin + performance.now();

if (isMainThread) await runServerSide();
else await runClients();

async function runServerSide() {
  const { apiGuards } = await import('../src/api/access/guards.ts');
  const { createHttpServer } = await import('../src/api/http/server.ts');
  const { attachWebSocket } = await import('../src/api/ws/server.ts');
  const { findModel } = await import('../src/boards/resolve.ts');
  const { loadConfig } = await import('../src/config/load.ts');
  const { createLogger } = await import('../src/logging/log.ts');
  const { buildRuntime } = await import('../src/runtime/runtime.ts');

  const scanHz = 50;
  const inputHz = Number(process.env.BENCH_INPUT_HZ ?? 0);
  const fastInputs = inputHz > 0 ? `        input_scan_frequency: ${inputHz}\n` : '';
  const dir = tempDir('iogate-bench-');
  const file = join(dir, 'config.yaml');
  writeFileSync(
    file,
    `apis:\n  limits:\n    max_websocket_clients: 256\ncomm_channels:\n  SIM:\n    type: SIMULATOR\n    toggle_ms: 0\n    devices:\n      1:\n        model: "00"\n        scan_frequency: ${scanHz}\n${fastInputs}`,
  );
  const { config } = loadConfig({ file });
  const log = createLogger('CRITICAL');
  const runtime = buildRuntime(config, (name) => findModel(name, new Map()), log);
  const input = runtime.registry.resolve('di', '1_01');
  // Subscribed before the WebSocket, so this stamp is taken before any send.
  let publishedAt = 0;
  runtime.feed.subscribe((devices) => {
    if (devices.includes(input)) publishedAt = now();
  });
  await runtime.start();
  const guards = apiGuards(config.apis);
  const server = createHttpServer({ registry: runtime.registry, feed: runtime.feed, version: 'bench', ...guards });
  const endpoint = attachWebSocket(server, { registry: runtime.registry, feed: runtime.feed, allFiltered: false }, guards, log);
  // Subscribed after the WebSocket: stamped once the send loop has handed the change to every socket.
  let sentAt = 0;
  runtime.feed.subscribe((devices) => {
    if (devices.includes(input)) sentAt = now();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = `ws://127.0.0.1:${server.address().port}/ws`;
  const board = [...runtime.simulations.values()][0].boards.values().next().value;
  const inputs = board.model.features.find((feature) => feature.type === 'DI');

  const rows = [];
  for (const clients of [1, 100]) {
    const worker = new Worker(new URL(import.meta.url), { workerData: { url, clients, mode: 'latency' } });
    const messages = messageQueue(worker);
    await messages.next(); // connected
    const samples = 300;
    const latencies = [];
    const polls = [];
    const pushes = [];
    const sends = [];
    let value = input.full().value;
    for (let i = 0; i < samples; i++) {
      // A random phase against the scan grid, so the wait for the next scan is sampled evenly.
      await new Promise((resolve) => setTimeout(resolve, Math.random() * (1000 / scanHz)));
      value = value ? 0 : 1;
      worker.postMessage({ expect: value });
      await messages.next(); // armed
      const changedAt = now();
      board.setBit(inputs.val_reg, 0, value === 1);
      const { received } = await messages.next();
      polls.push(publishedAt - changedAt);
      sends.push(sentAt - publishedAt);
      for (const at of received) {
        latencies.push(at - changedAt);
        pushes.push(at - publishedAt);
      }
    }
    await worker.terminate();
    rows.push({ clients, total: summary(latencies), poll: summary(polls), push: summary(pushes), send: summary(sends), overruns: runtime.slaves[0].stats.overruns });
  }

  // Throughput: change batches as fast as the loop can make them, for one client.
  const worker = new Worker(new URL(import.meta.url), { workerData: { url, clients: 1, mode: 'throughput' } });
  const messages = messageQueue(worker);
  await messages.next();
  const devices = [...runtime.registry.devices()].filter((device) => device.eventCapable);
  const seconds = 2;
  const until = performance.now() + seconds * 1000;
  let published = 0;
  while (performance.now() < until) {
    for (let i = 0; i < 50; i++) runtime.feed.publish([devices[published++ % devices.length]]);
    await new Promise((resolve) => setImmediate(resolve));
  }
  worker.postMessage({ report: true });
  const { count, updates } = await messages.next();
  await worker.terminate();

  // With fast inputs, the input reads' period is what a change waits for.
  const period = 1000 / (inputHz > 0 ? inputHz : scanHz);
  console.log(`\nScan period ${1000 / scanHz} ms (${scanHz} Hz)${inputHz > 0 ? `, inputs read every ${period} ms (${inputHz} Hz)` : ''}; target p99 ≤ ${period + 2} ms. Times in ms.\n`);
  console.log('| clients | change→client p50 | p99 | max | poll p50 | poll p99 | push p50 | push p99 | push max | of which send loop p50 | p99 | within target | scan overruns so far |');
  console.log('|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---:|---:|');
  for (const { clients, total, poll, push, send, overruns } of rows) {
    const cells = [total.p50, total.p99, total.max, poll.p50, poll.p99, push.p50, push.p99, push.max, send.p50, send.p99].map((ms) => ms.toFixed(2));
    console.log(`| ${clients} | ${cells.join(' | ')} | ${total.p99 <= period + 2 ? 'yes' : 'no'} | ${overruns} |`);
  }
  console.log(`\nOne client, ${seconds} s of single-device change batches (${published} published):`);
  console.log('| messages/s | device updates/s |');
  console.log('|---:|---:|');
  console.log(`| ${Math.round(count / seconds)} | ${Math.round(updates / seconds)} |`);

  endpoint.close();
  server.closeAllConnections();
  server.close();
  await runtime.stop();
}

function summary(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return { p50: at(0.5), p99: at(0.99), max: sorted.at(-1) };
}

/** Messages from a worker, awaited one by one in order. */
function messageQueue(worker) {
  const queue = [];
  const waiters = [];
  worker.on('message', (message) => (waiters.length ? waiters.shift()(message) : queue.push(message)));
  worker.on('error', (error) => {
    console.error(error);
    process.exit(1);
  });
  return { next: () => (queue.length ? Promise.resolve(queue.shift()) : new Promise((resolve) => waiters.push(resolve))) };
}

async function runClients() {
  const { default: WebSocket } = await import('ws');
  const { url, clients, mode } = workerData;
  const sockets = await Promise.all(
    Array.from({ length: clients }, async () => {
      const ws = new WebSocket(url);
      await once(ws, 'open');
      return ws;
    }),
  );
  if (mode === 'throughput') {
    let count = 0;
    let updates = 0;
    sockets[0].on('message', (data) => {
      count++;
      updates += JSON.parse(data).length;
    });
    parentPort.on('message', () => parentPort.postMessage({ count, updates }));
    parentPort.postMessage('connected');
    return;
  }
  let expected;
  let received = [];
  for (const ws of sockets) {
    ws.on('message', (data) => {
      const at = now();
      if (expected === undefined) return;
      const input = JSON.parse(data).find((device) => device.dev === 'di' && device.circuit === '1_01');
      if (input?.value !== expected) return;
      received.push(at);
      if (received.length === clients) {
        expected = undefined;
        parentPort.postMessage({ received });
        received = [];
      }
    });
  }
  parentPort.on('message', (message) => {
    expected = message.expect;
    parentPort.postMessage('armed');
  });
  parentPort.postMessage('connected');
}
