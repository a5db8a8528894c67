// Bundles the daemon and the standalone simulator into single files under
// dist/ that run on Node >= 18 with no node_modules beside them.
import { build } from 'esbuild';
import { readFileSync, writeFileSync, mkdirSync, cpSync, existsSync, rmSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createRequire } from 'node:module';

const pkg = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8'));
// Packaging builds a test upgrade with a higher version into its own folder;
// a normal build is package.json's version into dist/.
const version = process.env.IOGATE_BUILD_VERSION || pkg.version;
const out = process.env.IOGATE_BUILD_OUT || 'dist';
const require = createRequire(import.meta.url);

// @serialport/bindings-cpp finds its addon with node-gyp-build(<its package
// dir>) (in load-bindings.js and poller.js), which in a bundle would point
// next to nothing. Redirect every such lookup to the bundle's own directory,
// where node-gyp-build then picks prebuilds/<platform>-<arch>/ and the
// best-matching file (glibc or musl, armv6/7/8). Fail the build rather than
// ship a bundle that cannot open a port if a release loads its addon differently.
const ADDON_LOOKUP = "(0, node_gyp_build_1.default)((0, path_1.join)(__dirname, '../'))";
const prebuildsBesideBundle = {
  name: 'prebuilds-beside-bundle',
  setup(build) {
    build.onLoad({ filter: /[\\/]@serialport[\\/]bindings-cpp[\\/]dist[\\/][^\\/]+\.js$/ }, (args) => {
      const source = readFileSync(args.path, 'utf8');
      if (!source.includes('node-gyp-build')) return undefined;
      if (!source.includes(ADDON_LOOKUP)) {
        throw new Error(`${args.path}: addon lookup '${ADDON_LOOKUP}' not found; update build.mjs`);
      }
      // In the CommonJS bundle __dirname is the directory of the bundle file.
      return { contents: source.replaceAll(ADDON_LOOKUP, '(0, node_gyp_build_1.default)(__dirname)'), loader: 'js' };
    });
  },
};

const common = {
  plugins: [prebuildsBesideBundle],
  bundle: true,
  platform: 'node',
  target: 'node18',
  format: 'cjs',
  // The whole source stays in the process's heap; minified and pure ASCII (a
  // one-byte string to V8) it costs a fraction of the readable two-byte text.
  // Names are kept readable for stack traces in logs.
  minifySyntax: true,
  minifyWhitespace: true,
  charset: 'ascii',
  legalComments: 'none',
  define: { IOGATE_VERSION: JSON.stringify(version) },
  logLevel: 'warning',
};

mkdirSync(out, { recursive: true });
// The repository is an ES-module package; the bundles are CommonJS. Copied
// elsewhere they stand alone, but inside the repo dist/ needs to say so.
writeFileSync(join(out, 'package.json'), '{"type": "commonjs"}\n');
await Promise.all([
  build({ ...common, entryPoints: ['src/main.ts'], outfile: join(out, 'iogate.js'), banner: { js: '#!/usr/bin/env node' } }),
  build({ ...common, entryPoints: ['src/sim/cli.ts'], outfile: join(out, 'iogate-sim.js'), banner: { js: '#!/usr/bin/env node' } }),
]);

// serialport's native addon cannot be bundled; its prebuilt binaries travel
// beside the bundle and are found there at run time. PLCs run Linux, so the
// macOS, Windows and Android builds stay behind.
const bindingsDir = dirname(require.resolve('@serialport/bindings-cpp/package.json'));
const prebuilds = join(bindingsDir, 'prebuilds');
rmSync(join(out, 'prebuilds'), { recursive: true, force: true });
if (existsSync(prebuilds)) {
  for (const platform of readdirSync(prebuilds).filter((name) => name.startsWith('linux-'))) {
    cpSync(join(prebuilds, platform), join(out, 'prebuilds', platform), { recursive: true });
  }
}
