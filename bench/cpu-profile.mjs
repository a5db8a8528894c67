// Where a process's CPU went, from a V8 CPU profile (node --cpu-prof): self
// time by function and, for the functions given, their total time (self and
// callees).
//
//   node bench/cpu-profile.mjs FILE.cpuprofile [--top N] [--total NAME,NAME…]
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({ allowPositionals: true, options: { top: { type: 'string', default: '25' }, total: { type: 'string', default: '' } } });
const profile = JSON.parse(readFileSync(positionals[0], 'utf8'));
const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
const parent = new Map();
for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
const selfTicks = new Map();
for (const id of profile.samples) selfTicks.set(id, (selfTicks.get(id) ?? 0) + 1);
const all = profile.samples.length;
const ms = (ticks) => ((profile.endTime - profile.startTime) / 1000) * (ticks / all);
const label = ({ callFrame: f }) => `${f.functionName || '(anonymous)'} ${f.url.split('/').pop()}${f.url ? `:${f.lineNumber + 1}:${f.columnNumber + 1}` : ''}`;
const self = new Map();
for (const [id, ticks] of selfTicks) {
  const name = label(nodes.get(id));
  self.set(name, (self.get(name) ?? 0) + ticks);
}
const idle = [...self].filter(([name]) => name.startsWith('(idle)')).reduce((sum, [, ticks]) => sum + ticks, 0);
console.log(`${positionals[0]}: ${all} samples over ${fmt(ms(all))} ms, ${fmt(ms(all - idle))} ms not idle`);
for (const [name, ticks] of [...self].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top))) {
  console.log(`${fmt(ms(ticks)).padStart(9)} ms ${((ticks / (all - idle)) * 100).toFixed(1).padStart(5)} %  ${name}`);
}
for (const wanted of values.total.split(',').filter(Boolean)) {
  let ticks = 0;
  for (const [id, count] of selfTicks) {
    for (let at = id; at !== undefined; at = parent.get(at)) {
      if (nodes.get(at).callFrame.functionName === wanted) {
        ticks += count;
        break;
      }
    }
  }
  console.log(`total ${wanted}: ${fmt(ms(ticks))} ms, ${((ticks / (all - idle)) * 100).toFixed(1)} % of the busy time`);
}
function fmt(value) {
  return value.toFixed(1);
}
