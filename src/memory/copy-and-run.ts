import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

// A daemon copied and started as `node iogate.js` has none of the node options
// and environment of deploy/iogate.service, and idled 6-7 MB of private memory
// above the unit's (RssAnon 21-22 MB against 13-15). Most of that was glibc's
// trim threshold (MALLOC_TRIM_THRESHOLD_), which the malloc_trim addon can set
// once Node runs (setTrimThreshold); V8's gc(), which the quiet collections
// after a burst need, can be exposed late too. The young generation's size and
// the collector's threads are fixed when V8 starts: for those, the bundle's
// first line starts Node with the unit's main options when the file itself is run
// (`./iogate.js`), see build.mjs. docs/deployment.md "Copy and run".

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
