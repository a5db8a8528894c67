// Bundles the daemon and the standalone simulator into single files under
// dist/ that run on Node >= 18 with no node_modules beside them.
import { build } from 'esbuild';
import { readFileSync, writeFileSync, mkdirSync, cpSync, existsSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createRequire } from 'node:module';

const pkg = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8'));
const require = createRequire(import.meta.url);

const common = {
  bundle: true,
  platform: 'node',
  target: 'node18',
  format: 'cjs',
  minifySyntax: true,
  legalComments: 'none',
  define: { IOGATE_VERSION: JSON.stringify(pkg.version) },
  logLevel: 'warning',
};

mkdirSync('dist', { recursive: true });
// The repository is an ES-module package; the bundles are CommonJS. Copied
// elsewhere they stand alone, but inside the repo dist/ needs to say so.
writeFileSync('dist/package.json', '{"type": "commonjs"}\n');
await Promise.all([
  build({ ...common, entryPoints: ['src/main.ts'], outfile: 'dist/iogate.js', banner: { js: '#!/usr/bin/env node' } }),
]);

// serialport's native addon cannot be bundled; its prebuilt binaries travel
// beside the bundle and are found there at run time.
const bindingsDir = dirname(require.resolve('@serialport/bindings-cpp/package.json'));
const prebuilds = join(bindingsDir, 'prebuilds');
if (existsSync(prebuilds)) {
  rmSync('dist/prebuilds', { recursive: true, force: true });
  cpSync(prebuilds, 'dist/prebuilds', { recursive: true });
}
