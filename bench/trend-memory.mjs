// What the trend rings cost (src/trends/trend-store.ts): a store over a
// registry of N analog values is filled with a full hour (360 samples each),
// and the process's memory (V8 heap + ArrayBuffers, after full collections)
// is compared with the same registry without it, each in a fresh process,
// alternating, in the same run. Run with
// `npm run bench:trends`.
// (TREND_VALUES=comma-separated counts, default 10,100,1000).
import { Registry } from '../src/registry/registry.ts';
import { TrendStore } from '../src/trends/trend-store.ts';
import { Device } from '../src/devices/device.ts';


class Analog extends Device {
  type = 'ai';
  writeSpec = {};
  constructor(circuit) {
    super(circuit);
  }
  decode() {
    return { dev: 'ai', circuit: this.circuit, value: Math.random() * 10, unit: 'V' };
  }
  async apply() {}
}

function used() {
  if (typeof globalThis.gc !== 'function') throw new Error('the child runs with node --expose-gc');
  for (let i = 0; i < 4; i++) globalThis.gc();
  const { heapUsed, arrayBuffers } = process.memoryUsage();
  return heapUsed + arrayBuffers;
}

/** One measurement in a fresh process: the registry alone, or with the store filled. */
async function measure(count, withStore) {
  const registry = new Registry();
  for (let i = 0; i < count; i++) registry.add(new Analog(`1_${String(i + 1).padStart(4, '0')}`));
  let now = 1_800_000_000_000;
  const store = withStore ? new TrendStore(registry, { now: () => now }) : undefined;
  for (let i = 0; i < 400; i++) {
    // New readings each step, as a polled board gives them.
    for (const device of registry.list('ai')) device.refresh();
    store?.sample();
    now += 10_000;
  }
  const bytes = used();
  if (store && store.seriesCount !== count) throw new Error('series missing');
  return { bytes, samples: store ? store.sampleBytes() : 0 };
}

if (process.argv[2] === '--child') {
  console.log(JSON.stringify(await measure(Number(process.argv[3]), process.argv[4] === 'store')));
} else {
  const { execFileSync } = await import('node:child_process');
  const run = (count, kind) => JSON.parse(execFileSync(process.execPath, ['--expose-gc', '--import', 'tsx', new URL(import.meta.url).pathname, '--child', String(count), kind], { encoding: 'utf8' }));
  const counts = (process.env.TREND_VALUES ?? '10,100,1000').split(',').map(Number);
  console.log('| values | store, bytes (median of 3 pairs) | per value, bytes | of which samples |');
  console.log('|---:|---:|---:|---:|');
  for (const count of counts) {
    const diffs = [];
    let samples = 0;
    for (let round = 0; round < 3; round++) {
      const base = run(count, 'none');
      const filled = run(count, 'store');
      diffs.push(filled.bytes - base.bytes);
      samples = filled.samples;
    }
    const median = diffs.sort((a, b) => a - b)[1];
    console.log(`| ${count} | ${median} | ${Math.round(median / count)} | ${samples / count} |`);
  }
}
