// Summarises what the peer suites' traffic broke in Unipi's Evok_API_OAS.yaml
// (recorded by test/helpers/prism.ts): each distinct violation once, with how
// often and on which requests. Informational: the causes are listed in
// docs/differences-from-evok.md.
import { existsSync, readFileSync } from 'node:fs';

const file = process.argv[2];
if (!file || !existsSync(file)) {
  console.log('no report (Prism did not run, or ../shared/reference is absent)');
  process.exit(0);
}
const groups = new Map();
for (const line of readFileSync(file, 'utf8').split('\n')) {
  if (!line.trim()) continue;
  const { request, message } = JSON.parse(line);
  // Circuits and aliases vary; the route is what tells violations apart.
  const route = request.replace(/\/(rest|json)\/([^/]+)\/[^/]+/, '/$1/$2/{circuit}');
  const key = `${route} | ${message}`;
  groups.set(key, (groups.get(key) ?? 0) + 1);
}
console.log(`${groups.size} distinct violations of Evok_API_OAS.yaml:`);
for (const [key, count] of [...groups].sort((a, b) => b[1] - a[1])) console.log(`${String(count).padStart(6)}  ${key}`);
