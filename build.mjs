// Bundles the daemon and the standalone simulator into single files under
// dist/ that run on Node >= 18 with no node_modules beside them.
import { build, transform } from 'esbuild';
import { createHash } from 'node:crypto';
import { chmodSync, readFileSync, writeFileSync, mkdirSync, cpSync, existsSync, rmSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createRequire } from 'node:module';
import { compileMallocTrim, mallocTrimFile } from './deploy/native-addon.mjs';

const pkg = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8'));
// Packaging builds a test upgrade with a higher version into its own folder;
// a normal build is package.json's version into dist/.
const version = process.env.IOGATE_BUILD_VERSION || pkg.version;
const out = process.env.IOGATE_BUILD_OUT || 'dist';
const require = createRequire(import.meta.url);

// The daemon's first line. Run as `./iogate.js` (copy and run), the bundle
// starts Node with the service unit's memory settings that must be there
// before V8 starts: its trim threshold and its three options that matter most
// (bench: RssAnon idle 14 MB against 21-22 without; deploy/iogate.service says
// why each). Kernels before 5.1 cut a `#!` line after 127 bytes, so it carries
// no more; test/unit/build/copy-and-run.test.ts holds it to the unit's values.
// `node iogate.js` gets what can be set late (src/memory/copy-and-run.ts).
const DAEMON_SHEBANG = '#!/usr/bin/env -S MALLOC_TRIM_THRESHOLD_=65536 node --max-semi-space-size=1 --optimize-for-size --expose-gc';

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

// The control panel (src/panel/): its script and stylesheet are built first
// and inlined into one HTML page, which the daemon bundle carries as a string.
// Inline code runs under the page's Content-Security-Policy only with its
// hash, so the policy is computed here from the exact bytes served.
async function buildPanel() {
  const script = await build({
    entryPoints: ['src/panel/main.ts'], bundle: true, write: false, format: 'iife', target: 'es2020',
    minify: true, charset: 'ascii', legalComments: 'none', logLevel: 'warning',
  });
  const js = script.outputFiles[0].text.trim();
  const css = (await transform(readFileSync('src/panel/panel.css', 'utf8'), { loader: 'css', minify: true, charset: 'ascii' })).code.trim();
  if (js.includes('</script') || css.includes('</style')) throw new Error('panel: inline code would close its own tag');
  const page = readFileSync('src/panel/page.html', 'utf8');
  for (const marker of ['/*STYLE*/', '/*SCRIPT*/']) {
    if (page.split(marker).length !== 2) throw new Error(`panel: page.html must hold ${marker} exactly once`);
  }
  const html = page.replace(/\n\s*/g, '\n').replace('/*STYLE*/', () => css).replace('/*SCRIPT*/', () => js);
  const hash = (text) => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;
  const csp = [
    "default-src 'self'", "connect-src 'self'", `script-src ${hash(js)}`, `style-src ${hash(css)}`,
    "img-src 'self' data:", "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'", "object-src 'none'",
  ].join('; ');
  return { html, csp };
}
const panel = await buildPanel();

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
  build({
    ...common,
    entryPoints: ['src/main.ts'],
    outfile: join(out, 'iogate.js'),
    // Run as `./iogate.js`, the bundle starts Node with the service unit's
    // memory options (src/memory/copy-and-run.ts).
    banner: { js: DAEMON_SHEBANG },
    // Strings, not an object: esbuild inlines a string define where it is used,
    // but turns an object into a module that every other module would import.
    define: { ...common.define, IOGATE_PANEL_HTML: JSON.stringify(panel.html), IOGATE_PANEL_CSP: JSON.stringify(panel.csp) },
  }),
  build({ ...common, entryPoints: ['src/sim/cli.ts'], outfile: join(out, 'iogate-sim.js'), banner: { js: '#!/usr/bin/env node' } }),
]);
// Both run as programs when copied (./iogate.js), as the #! lines mean.
for (const file of ['iogate.js', 'iogate-sim.js']) chmodSync(join(out, file), 0o755);

// The OpenAPI description the daemon serves at /openapi.json, also as a file
// for the package and for tools: the same code writes both.
{
  const { outputFiles } = await build({ ...common, plugins: [], entryPoints: ['src/api/http/openapi.ts'], format: 'esm', write: false, minifySyntax: false, minifyWhitespace: false, charset: 'utf8' });
  const { openApiDocument } = await import(`data:text/javascript;base64,${Buffer.from(outputFiles[0].text).toString('base64')}`);
  writeFileSync(join(out, 'openapi.json'), `${JSON.stringify(openApiDocument(version), null, 1)}\n`);
}

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

// The malloc_trim addon (src/memory/malloc-trim.c) for this machine, when it
// has a C compiler: `npm start` and the benchmarks then run as the packages
// do. Without one the daemon runs all the same (it only keeps the C heap a
// burst of requests frees), so a machine with Node alone can still build and test.
rmSync(join(out, 'native'), { recursive: true, force: true });
if (process.platform === 'linux') {
  const compiler = process.env.CC || 'cc';
  try {
    compileMallocTrim(compiler, [], mallocTrimFile(out, `${process.platform}-${process.arch}`));
  } catch (error) {
    // ENOENT: no compiler; EACCES: one that cannot be run (as on CI's bare machine, where it is covered).
    const reason = typeof error.code === 'string' ? `cannot run the C compiler ${compiler} (${error.code})` : String(error.stderr ?? '').trim() || error.message;
    rmSync(join(out, 'native'), { recursive: true, force: true });
    console.warn(`build.mjs: ${out}/ without the malloc_trim addon: ${reason}`);
  }
}
