// The optional native addon (malloc-trim.c) that gives the C library's freed
// heap back to the system. build.mjs compiles it beside the bundle when a C
// compiler is at hand, and the Debian packages carry it for their
// architecture; anywhere else (no compiler, another C library, another OS)
// iogate runs without it and only keeps that memory.

import { existsSync } from 'node:fs';
import { join } from 'node:path';

/** Where build.mjs and the packages put the addon, relative to the bundle's directory. */
export function mallocTrimPath(bundleDir: string, platform: string = process.platform, arch: string = process.arch): string {
  return join(bundleDir, 'native', `${platform}-${arch}`, 'malloc-trim.node');
}

export type MallocTrimLoad =
  | { readonly trim: () => boolean; readonly setTrimThreshold: () => boolean }
  | { readonly absent: string }
  | { readonly failed: string };

/** Loads the addon from beside the bundle; says why when there is none to use. */
export function loadMallocTrim(bundleDir: string | undefined): MallocTrimLoad {
  if (bundleDir === undefined) return { absent: 'not running from a bundle' };
  const file = mallocTrimPath(bundleDir);
  if (!existsSync(file)) return { absent: `${file} not built` };
  const addon: { exports: { mallocTrim?: unknown; setTrimThreshold?: unknown } } = { exports: {} };
  try {
    process.dlopen(addon, file);
  } catch (error) {
    // Built for another architecture or C library (musl has no malloc_trim).
    return { failed: `${file}: ${(error as Error).message}` };
  }
  const { mallocTrim, setTrimThreshold } = addon.exports;
  if (typeof mallocTrim !== 'function') return { failed: `${file}: exports no mallocTrim()` };
  if (typeof setTrimThreshold !== 'function') return { failed: `${file}: exports no setTrimThreshold()` };
  return { trim: () => (mallocTrim as () => boolean)() === true, setTrimThreshold: () => (setTrimThreshold as () => boolean)() === true };
}
