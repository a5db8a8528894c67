// Builds dist/iogate_<version>_<arch>.deb for the PLCs' architectures with
// Debian's dpkg-deb: the bundle built by build.mjs, that architecture's
// serialport prebuild only, iogate's malloc_trim addon compiled for it
// (Debian's cross compilers: deploy/native-addon.mjs), the systemd unit, a
// default configuration, the man page and the maintainer scripts in
// deploy/debian/.
//
//   node deploy/package.mjs [--version V] [--bundle DIR] [--out DIR] [--arch amd64,arm64,armhf]
//
// --bundle is the folder build.mjs wrote (dist/ by default); CI passes a
// second build with a higher version to test upgrades.
import { execFileSync } from 'node:child_process';
import {
  chmodSync, copyFileSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import { gzipSync } from 'node:zlib';
import { CROSS, compileMallocTrim, mallocTrimFile } from './native-addon.mjs';

const root = join(dirname(new URL(import.meta.url).pathname), '..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const { values: args } = parseArgs({
  options: {
    version: { type: 'string', default: pkg.version },
    bundle: { type: 'string', default: join(root, 'dist') },
    out: { type: 'string', default: join(root, 'dist') },
    arch: { type: 'string', default: 'amd64,arm64,armhf' },
  },
});

// Debian architecture → serialport's prebuild folder and the files of it a
// Debian system can load (glibc; Raspbian's armhf userland is armv6).
const ARCHES = {
  amd64: { platform: 'linux-x64', files: ['node.napi.glibc.node'] },
  arm64: { platform: 'linux-arm64', files: ['node.napi.armv8.node'] },
  armhf: { platform: 'linux-arm', files: ['node.napi.armv7.node', 'node.napi.armv6.node'] },
};

const MAINTAINER = process.env.DEB_MAINTAINER ?? 'iogate developers <iogate@users.noreply.github.com>';
// Reproducible archives: every file gets the same time.
const EPOCH = Number(process.env.SOURCE_DATE_EPOCH ?? execFileSync('git', ['log', '-1', '--format=%ct'], { cwd: root, encoding: 'utf8' }).trim());

for (const file of ['iogate.js', 'iogate-sim.js']) {
  if (!existsSync(join(args.bundle, file))) throw new Error(`${join(args.bundle, file)} missing: run node build.mjs first`);
}
mkdirSync(args.out, { recursive: true });
for (const arch of args.arch.split(',')) {
  const spec = ARCHES[arch];
  if (!spec) throw new Error(`unknown architecture '${arch}' (one of ${Object.keys(ARCHES).join(', ')})`);
  const file = join(args.out, `iogate_${args.version}_${arch}.deb`);
  buildPackage(arch, spec, file);
  process.stdout.write(`${relative(process.cwd(), file)}\n`);
}

function buildPackage(arch, spec, outFile) {
  const stage = mkdtempSync(join(tmpdir(), `iogate-deb-${arch}-`));
  try {
    const lib = join(stage, 'usr/lib/iogate');
    mkdirSync(lib, { recursive: true });
    for (const name of ['iogate.js', 'iogate-sim.js']) {
      // Debian's node, not whatever `env` finds first on PATH. The daemon's copy-and-run line
      // (`env -S` with memory settings, build.mjs) is not needed here: the unit passes them, and
      // lintian rejects `env -S` as an interpreter.
      const text = readFileSync(join(args.bundle, name), 'utf8').replace(/^#!.*/, '#!/usr/bin/node');
      writeFileSync(join(lib, name), text, { mode: 0o755 });
    }
    const prebuilds = join(lib, 'prebuilds', spec.platform);
    mkdirSync(prebuilds, { recursive: true });
    for (const name of spec.files) copyFileSync(join(args.bundle, 'prebuilds', spec.platform, name), join(prebuilds, name));
    const addon = mallocTrimFile(lib, spec.platform);
    compileAddon(arch, addon);

    mkdirSync(join(stage, 'usr/bin'), { recursive: true });
    symlinkSync('../lib/iogate/iogate.js', join(stage, 'usr/bin/iogate'));
    install(join(root, 'deploy/iogate.service'), join(stage, 'lib/systemd/system/iogate.service'));
    install(join(root, 'deploy/debian/config.yaml'), join(stage, 'usr/share/iogate/config.yaml'));
    writeGzip(readFileSync(join(root, 'deploy/iogate.1')), join(stage, 'usr/share/man/man1/iogate.1.gz'));

    const doc = join(stage, 'usr/share/doc/iogate');
    mkdirSync(doc, { recursive: true });
    writeFileSync(join(doc, 'copyright'), copyrightFile());
    writeGzip(Buffer.from(changelog()), join(doc, 'changelog.gz'));
    writeGzip(readFileSync(join(root, 'README.md')), join(doc, 'README.md.gz'));
    // The README links its topic pages as docs/<page>.md; they ship beside it.
    mkdirSync(join(doc, 'docs'), { recursive: true });
    for (const page of readdirSync(join(root, 'docs')).filter((name) => name.endsWith('.md'))) {
      writeGzip(readFileSync(join(root, 'docs', page)), join(doc, 'docs', `${page}.gz`));
    }
    // The API description the daemon also serves at /openapi.json, for tools that read it from a file.
    install(join(args.bundle, 'openapi.json'), join(stage, 'usr/share/iogate/openapi.json'));
    // The nginx sites that serve EVOK's web panel in front of iogate (plain HTTP, or its TLS port), as examples to copy.
    for (const name of ['nginx-iogate.conf', 'nginx-iogate-tls.conf']) {
      const nginxSite = join(root, 'deploy', name);
      if (existsSync(nginxSite)) install(nginxSite, join(doc, 'examples', name));
    }
    install(join(root, 'deploy/debian/lintian-overrides'), join(stage, 'usr/share/lintian/overrides/iogate'));

    const control = join(stage, 'DEBIAN');
    mkdirSync(control, { recursive: true });
    for (const script of ['postinst', 'prerm', 'postrm']) {
      copyFileSync(join(root, 'deploy/debian', script), join(control, script));
      chmodSync(join(control, script), 0o755);
    }
    writeFileSync(join(control, 'control'), controlFile(arch, installedSizeKiB(stage), libraryDepends([...spec.files.map((name) => join(prebuilds, name)), addon])));
    writeFileSync(join(control, 'md5sums'), md5sums(stage));
    normalize(stage);
    rmSync(outFile, { force: true });
    execFileSync('dpkg-deb', ['--root-owner-group', '-Zxz', '--build', stage, outFile], {
      stdio: ['ignore', 'ignore', 'inherit'],
      env: { ...process.env, SOURCE_DATE_EPOCH: String(EPOCH) },
    });
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
}

/** A package without the addon would quietly keep more memory: no cross compiler fails the build. */
function compileAddon(arch, outFile) {
  const { compiler, flags, packages } = CROSS[arch];
  try {
    compileMallocTrim(compiler, flags, outFile);
  } catch (error) {
    const reason = error.code === 'ENOENT' ? `${compiler} not found (apt-get install ${packages})` : String(error.stderr ?? '').trim() || error.message;
    throw new Error(`${arch}: cannot compile the malloc_trim addon: ${reason}`);
  }
}

function install(from, to, mode = 0o644) {
  mkdirSync(dirname(to), { recursive: true });
  copyFileSync(from, to);
  chmodSync(to, mode);
}

function writeGzip(content, to) {
  mkdirSync(dirname(to), { recursive: true });
  // zlib writes no name and a zero time into the header: the same bytes every build.
  writeFileSync(to, gzipSync(content, { level: 9 }));
}

function controlFile(arch, installedSize, libraries) {
  return `Package: iogate
Version: ${args.version}
Architecture: ${arch}
Maintainer: ${MAINTAINER}
Installed-Size: ${installedSize}
Depends: nodejs (>= 18), ${libraries}, init-system-helpers (>= 1.54~), passwd
Suggests: nginx-light
Section: net
Priority: optional
Description: EVOK-compatible API daemon for Unipi PLCs
 iogate polls the I/O boards of a Unipi-style PLC over Modbus RTU and
 Modbus TCP and serves them through the network APIs of Unipi's EVOK v3
 (REST, JSON, bulk, JSON-RPC, WebSocket, webhooks) plus MQTT. It reads
 EVOK's /etc/evok/config.yaml and /var/lib/evok/alias.yaml unchanged, so
 EVOK's clients keep working.
 .
 The service replaces evok.service while it runs; removing the package
 gives the controller back to EVOK.
`;
}

function changelog() {
  const date = new Date(EPOCH * 1000).toUTCString().replace(/GMT$/, '+0000');
  return `iogate (${args.version}) stable; urgency=medium

  * Release ${args.version}; see /usr/share/doc/iogate/README.md.gz.

 -- ${MAINTAINER}  ${date.replace(/^(\w+), 0?/, '$1, ')}
`;
}

function copyrightFile() {
  // Everything bundled into the .js files and the serialport addon: the lock file's runtime entries.
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8'));
  const byLicense = new Map();
  for (const [path, entry] of Object.entries(lock.packages)) {
    if (path === '' || entry.dev || entry.devOptional) continue;
    const names = byLicense.get(entry.license) ?? new Set();
    byLicense.set(entry.license, names.add(path.replace(/.*node_modules\//, '')));
  }
  const licenses = [...byLicense.keys()].sort();
  const known = readFileSync(join(root, 'deploy/debian/licenses.txt'), 'utf8').split('\n\n');
  const texts = licenses.filter((license) => license !== 'Apache-2.0').map((license) => {
    const text = known.find((paragraph) => paragraph.startsWith(`License: ${license}\n`));
    if (!text) throw new Error(`bundled license ${license} has no text in deploy/debian/licenses.txt`);
    return text.trimEnd();
  });
  const bundled = licenses.map((license) => ` ${license}: ${[...byLicense.get(license)].sort().join(', ')}.`).join('\n');
  return `Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: iogate

Files: *
Copyright: ${new Date(EPOCH * 1000).getUTCFullYear()} iogate developers
License: Apache-2.0

Files: usr/lib/iogate/*
Copyright: ${new Date(EPOCH * 1000).getUTCFullYear()} iogate developers, and the authors of the npm packages bundled into it
License: ${licenses.join(' and ')}
Comment: iogate.js and iogate-sim.js bundle iogate's own code (Apache-2.0) with
 these npm packages; prebuilds/ is the native part of @serialport/bindings-cpp;
 native/ is iogate's own (Apache-2.0).
${bundled}

License: Apache-2.0
 On Debian systems the full text of the Apache License 2.0 is in
 /usr/share/common-licenses/Apache-2.0.

${texts.join('\n\n')}
`;
}

/**
 * What the native addons (serialport's, and iogate's malloc_trim) link
 * against (dpkg-shlibdeps needs a source package; this reads the same facts
 * from the ELF files): the C library at the
 * newest symbol version it uses, and the C++ runtime of GCC >= 5 (GLIBCXX_3.4.21).
 */
function libraryDepends(files) {
  let glibc = '2.17';
  for (const file of files) {
    const versions = execFileSync('readelf', ['--version-info', '--wide', file], { encoding: 'utf8' }).match(/GLIBC_[0-9.]+/g) ?? [];
    for (const version of versions.map((name) => name.slice('GLIBC_'.length))) {
      if (compareVersions(version, glibc) > 0) glibc = version;
    }
  }
  return `libc6 (>= ${glibc}), libgcc-s1 (>= 3.0), libstdc++6 (>= 5.2)`;
}

function compareVersions(a, b) {
  const [x, y] = [a.split('.').map(Number), b.split('.').map(Number)];
  for (let i = 0; i < Math.max(x.length, y.length); i++) if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) - (y[i] ?? 0);
  return 0;
}

function walk(dir, visit) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    visit(path);
    if (lstatSync(path).isDirectory()) walk(path, visit);
  }
}

function installedSizeKiB(stage) {
  let kib = 0;
  walk(stage, (path) => {
    const stat = lstatSync(path);
    kib += stat.isFile() ? Math.ceil(stat.size / 1024) : 1;
  });
  return kib;
}

function md5sums(stage) {
  const lines = [];
  walk(stage, (path) => {
    if (!lstatSync(path).isFile() || relative(stage, path).startsWith('DEBIAN')) return;
    const sum = execFileSync('md5sum', [path], { encoding: 'utf8' }).split(' ')[0];
    lines.push(`${sum}  ${relative(stage, path)}`);
  });
  return lines.sort().join('\n') + '\n';
}

/** Directories 0755, files 0644 unless already executable, one timestamp. */
function normalize(stage) {
  const paths = [stage];
  walk(stage, (path) => paths.push(path));
  for (const path of paths) {
    const stat = lstatSync(path);
    if (stat.isSymbolicLink()) continue;
    if (stat.isDirectory()) chmodSync(path, 0o755);
    else chmodSync(path, stat.mode & 0o111 ? 0o755 : 0o644);
  }
  execFileSync('touch', ['-h', '-d', `@${EPOCH}`, ...paths]);
}

