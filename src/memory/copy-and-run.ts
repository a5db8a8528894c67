import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

// A daemon copied and started as `node iogate.js` has none of the node options
// and environment of deploy/iogate.service, and idled 6-7 MB of private memory
// above the unit's (RssAnon 22 MB against 15 with the bench configuration).
// Measured (v8.getHeapSpaceStatistics, /proc/<pid>/smaps), nearly all of it
// was V8's young generation: start-up survives enough for V8 to double the
// semi-spaces twice (1 -> 4 MB each, 8 MB in all), and V8 shrinks them again
// only while the program allocates less than 1,000 bytes per ms. Polling the
// bench configuration's five boards at 50 Hz allocates about 1,100, so they
// stayed at 8 MB; the built-in configuration (about 350) shrank back, which is
// why only a configuration with several boards showed it. The rest (0.5-1 MB)
// was the old generation, which --optimize-for-size grows less.
//
// The unit's --max-semi-space-size is read once, when V8 sets up its heap, so
// it cannot be given late. What V8 reads each time it grows the semi-spaces
// is its growth factor: set to 1 before the start-up allocates, the young
// generation keeps its initial size (1 MB a semi-space on 64-bit, the unit's
// bound; 512 KB on 32-bit ARM, where the unit lets it grow to 1 MB). V8 itself
// raises a factor below 2 given at start-up to 2, so this works only late; a
// factor of 1 makes each growth step a no-op (docs/adr/0003). --optimize-for-size
// is read where it is used, so late it works as at start-up. Options the
// user gave win: a young generation or size optimisation chosen on the command
// line or in NODE_OPTIONS is left alone, so under the unit and run as a
// program (`./iogate.js`, the bundle's #! line) nothing is set twice.
// glibc's trim threshold (MALLOC_TRIM_THRESHOLD_) is set late by the malloc_trim
// addon (setTrimThreshold) and V8's gc(), which the quiet collections after a
// burst need, is exposed late below. docs/deployment.md "Copy and run".

/** V8 flags that act when set after V8 has started, each with what makes it redundant. */
const LATE_FLAGS: readonly { readonly flag: string; readonly givenBy: RegExp }[] = [
  // Any semi-space option (--max-semi-space-size=1 in the unit) is a young generation already chosen.
  { flag: '--semi-space-growth-factor=1', givenBy: /^--(?:no-)?(?:max-|min-)?semi-space/ },
  { flag: '--optimize-for-size', givenBy: /^--(?:no-)?optimize-for-size(?:=|$)/ },
];

/** Node's and V8's options as the command line and NODE_OPTIONS gave them, with V8's `_` spelled `-`. */
export function startOptions(execArgv: readonly string[] = process.execArgv, nodeOptions: string | undefined = process.env['NODE_OPTIONS']): string[] {
  const words = [...execArgv, ...(nodeOptions ?? '').split(/\s+/)].filter((word) => word.startsWith('--'));
  return words.map((word) => {
    const equals = word.indexOf('=');
    const name = equals < 0 ? word : word.slice(0, equals);
    return name.replaceAll('_', '-') + (equals < 0 ? '' : word.slice(equals));
  });
}

/** The late V8 flags that `options` (startOptions) do not already decide. */
export function lateV8Flags(options: readonly string[]): string[] {
  return LATE_FLAGS.filter(({ givenBy }) => !options.some((option) => givenBy.test(option))).map(({ flag }) => flag);
}

let setLate: readonly string[] | undefined;

/**
 * Sets the late V8 flags node was started without; returns those set. Once per
 * process: src/memory/v8-flags-first.ts calls it before the daemon's start-up
 * allocates, main.ts asks again for its log line.
 */
export function setV8FlagsLate(options: readonly string[] = startOptions()): readonly string[] {
  if (setLate) return setLate;
  const flags = lateV8Flags(options);
  for (const flag of flags) setFlagsFromString(flag);
  setLate = flags;
  return flags;
}

/**
 * Exposes V8's gc() when node was started without --expose-gc. Returns true
 * when it did. Setting this one flag late is safe: it only installs the
 * function in contexts made afterwards, which is why gc() is taken from a new one.
 */
export function exposeGcLate(): boolean {
  const global = globalThis as { gc?: unknown };
  if (typeof global.gc === 'function') return false;
  setFlagsFromString('--expose-gc');
  global.gc = runInNewContext('gc') as unknown;
  return typeof global.gc === 'function';
}
