// What process.nextTick costs before and after full collections, with and
// without the entry iogate keeps alive (src/memory/tick-shape.ts), each in a
// fresh process, alternating. Without it, a full collection while no entry is
// alive makes every later nextTick dearer for the rest of the process.
//
//   node --import tsx bench/tick-shape.mjs [--rounds N] [--ticks N] [--node-options '…']
//
// Prints ns per nextTick per round, and one JSON line: medians after the first
// collections, and their ratio (plain / kept).
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { log, median, optionWords, serviceNodeOptions } from './common.mjs';

const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '6' },
    ticks: { type: 'string', default: '2000000' },
    reps: { type: 'string', default: '2' },
    'node-options': { type: 'string' },
  },
});
const MODULE = fileURLToPath(new URL('../src/memory/tick-shape.ts', import.meta.url));
const nodeOptions = args['node-options'] === undefined ? serviceNodeOptions() : optionWords(args['node-options']);
if (!nodeOptions.includes('--expose-gc')) nodeOptions.push('--expose-gc');

// Bursts of nextTick calls; between them the queue drains and gc() runs twice,
// as the daemon's quiet collections do once a burst of requests is over.
const CHILD = `
import { keepTickObjectShape } from ${JSON.stringify(MODULE)};
if (process.argv.includes('kept')) keepTickObjectShape();
const noop = () => {};
const burst = (n) => new Promise((resolve) => {
  let left = n;
  const started = process.hrtime.bigint();
  const step = () => {
    for (let i = 0; i < 100; i++) process.nextTick(noop);
    left -= 100;
    if (left > 0) setImmediate(step);
    else resolve(Number(process.hrtime.bigint() - started) / n);
  };
  step();
});
const rounds = [];
for (let round = 0; round < ${Number(args.rounds)}; round++) {
  rounds.push(await burst(${Number(args.ticks)}));
  await new Promise((resolve) => setTimeout(resolve, 50));
  gc();
  gc();
}
process.stdout.write(JSON.stringify(rounds));
`;

function run(kept) {
  const out = execFileSync(process.execPath, [...nodeOptions, '--import', 'tsx', '--input-type=module', '-e', CHILD, '--', ...(kept ? ['kept'] : [])], {
    encoding: 'utf8',
  });
  return JSON.parse(out);
}

const results = { plain: [], kept: [] };
for (let rep = 1; rep <= Number(args.reps); rep++) {
  for (const kind of ['plain', 'kept']) {
    const rounds = run(kind === 'kept');
    results[kind].push(rounds);
    log(`${kind.padEnd(5)} rep ${rep}: ${rounds.map((ns) => ns.toFixed(0)).join(' ')} ns per nextTick (a full collection after each round)`);
  }
}
const before = (kind) => median(results[kind].map((rounds) => rounds[0]));
const after = (kind) => median(results[kind].flatMap((rounds) => rounds.slice(2)));
const summary = {
  node_flags: nodeOptions.join(' '),
  plain_ns_before: Math.round(before('plain')),
  plain_ns_after: Math.round(after('plain')),
  kept_ns_before: Math.round(before('kept')),
  kept_ns_after: Math.round(after('kept')),
  ratio_after: Math.round((after('plain') / after('kept')) * 100) / 100,
};
console.log(JSON.stringify(summary));
