// Loaded with `node --require bench/probe.cjs` into each process bench/idle.mjs
// measures (the daemon and the bare poller alike), and asked over the IPC
// channel for what only the process itself can see:
//   - event-loop utilisation (cumulative, performance.eventLoopUtilization);
//   - timers started (setTimeout/setInterval calls, counted by wrapping them)
//     and timers alive at the moment;
//   - garbage collections, minor and major, and their time (a `gc` observer);
//   - on request, a window with V8's sampling heap profiler (objects that
//     died young included, so it sees all allocations, not only the live ones)
//     and a count of promises created (v8.promiseHooks): bytes and promises per
//     poll, and the functions that allocate most. Both cost CPU while on, so
//     the bench runs that window after its CPU rounds.
// Nothing here runs between requests: no timer, and the channel is unref'd,
// so a process with the probe idles as it would without it.
'use strict';
const { PerformanceObserver, performance } = require('node:perf_hooks');
const timers = require('node:timers');
const inspector = require('node:inspector');
const v8 = require('node:v8');

if (typeof process.send === 'function') {
  let timersStarted = 0;
  for (const name of ['setTimeout', 'setInterval']) {
    const original = timers[name];
    const counted = function (...args) {
      timersStarted++;
      return original.apply(this, args);
    };
    timers[name] = counted;
    globalThis[name] = counted;
  }
  const gc = { minor: 0, major: 0, ms: 0 };
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      // kind 1: scavenge (minor); 2, 4: mark-compact / incremental (major); 8: weak callbacks.
      const kind = entry.detail?.kind ?? entry.kind;
      if (kind === 1) gc.minor++;
      else gc.major++;
      gc.ms += entry.duration;
    }
  }).observe({ entryTypes: ['gc'] });

  let session;
  let promises = 0;
  let stopPromiseHook;
  const post = (method, params) =>
    new Promise((resolve, reject) => session.post(method, params, (error, result) => (error ? reject(error) : resolve(result))));

  const snapshot = () => {
    const elu = performance.eventLoopUtilization();
    const alive = process.getActiveResourcesInfo().filter((type) => type === 'Timeout').length;
    const memory = process.memoryUsage();
    return { elu: { idle: elu.idle, active: elu.active }, timersStarted, timersAlive: alive, gc: { ...gc }, heapUsed: memory.heapUsed, external: memory.external };
  };

  process.on('message', async (message) => {
    try {
      if (message.probe === 'snapshot') {
        process.send({ probe: 'snapshot', ...snapshot() });
      } else if (message.probe === 'start-allocations') {
        session = new inspector.Session();
        session.connect();
        await post('HeapProfiler.enable');
        await post('HeapProfiler.startSampling', {
          samplingInterval: message.samplingInterval ?? 1024,
          includeObjectsCollectedByMajorGC: true,
          includeObjectsCollectedByMinorGC: true,
        });
        promises = 0;
        stopPromiseHook = v8.promiseHooks.onInit(() => promises++);
        process.send({ probe: 'started' });
      } else if (message.probe === 'stop-allocations') {
        const { profile } = await post('HeapProfiler.stopSampling');
        stopPromiseHook?.();
        session.disconnect();
        const bySite = new Map();
        let bytes = 0;
        const walk = (node) => {
          bytes += node.selfSize;
          if (node.selfSize > 0) {
            const frame = node.callFrame;
            const site = `${frame.functionName || '(anonymous)'} ${frame.url.split('/').pop()}:${frame.lineNumber + 1}`;
            bySite.set(site, (bySite.get(site) ?? 0) + node.selfSize);
          }
          for (const child of node.children) walk(child);
        };
        walk(profile.head);
        const top = [...bySite].sort((a, b) => b[1] - a[1]).slice(0, message.top ?? 12);
        process.send({ probe: 'allocations', bytes, promises, top });
      }
    } catch (error) {
      process.send({ probe: 'error', message: String(error?.stack ?? error) });
    }
  });
  process.channel?.unref();
}
