// Compiles iogate's one native file, src/memory/malloc-trim.c, into a Node
// addon (see that file for why it exists). build.mjs builds it for the
// machine it runs on, when it has a C compiler; deploy/package.mjs builds it
// for each package's architecture with Debian's cross compilers.
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';

const root = join(dirname(new URL(import.meta.url).pathname), '..');
export const MALLOC_TRIM_SOURCE = join(root, 'src/memory/malloc-trim.c');

// Position-independent, hardened like Debian's own builds (full RELRO, no
// executable stack), stripped, without the compiler's .comment section (all
// lintian asks of a binary). No start files: the addon has no constructors,
// and on armhf the toolchain's are ARMv7 code while Raspbian runs on ARMv6.
const FLAGS = [
  '-shared', '-fPIC', '-O2', '-fno-ident', '-fvisibility=hidden', '-Wall', '-Wextra', '-Werror', '-s', '-nostartfiles',
  '-Wl,-z,relro,-z,now', '-Wl,-z,noexecstack', '-Wl,--as-needed',
];

/** Debian architecture → Node's platform folder, the cross compiler, and the Debian packages that provide it. */
export const CROSS = {
  amd64: { platform: 'linux-x64', compiler: 'x86_64-linux-gnu-gcc', flags: [], packages: 'gcc-x86-64-linux-gnu' },
  arm64: { platform: 'linux-arm64', compiler: 'aarch64-linux-gnu-gcc', flags: [], packages: 'gcc-aarch64-linux-gnu libc6-dev-arm64-cross' },
  // ARMv6 with VFP: the oldest CPU Raspbian's armhf (and serialport's armv6 build) runs on.
  armhf: {
    platform: 'linux-arm', compiler: 'arm-linux-gnueabihf-gcc', flags: ['-march=armv6+fp', '-marm', '-mfloat-abi=hard'],
    packages: 'gcc-arm-linux-gnueabihf libc6-dev-armhf-cross',
  },
};

/** Where the loader (src/memory/malloc-trim.ts) looks for the addon, relative to the bundle's directory. */
export function mallocTrimFile(bundleDir, platform) {
  return join(bundleDir, 'native', platform, 'malloc-trim.node');
}

/** Compiles the addon to `outFile`; throws with the compiler's message when it cannot. */
export function compileMallocTrim(compiler, extraFlags, outFile) {
  mkdirSync(dirname(outFile), { recursive: true });
  execFileSync(compiler, [...FLAGS, ...extraFlags, '-o', outFile, MALLOC_TRIM_SOURCE], { stdio: ['ignore', 'ignore', 'pipe'] });
}
