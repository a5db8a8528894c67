import type { Logger } from '../logging/log.js';
import type { Link } from './link.js';

// `--debug`: every frame a bus sends and every chunk it receives, in hex, with
// the time since the last frame sent, for commissioning an RS485 line (wrong
// baud rate, two masters, a slave that answers late). A line polled at 50 Hz
// makes hundreds of lines a second, so each bus may log at most
// TRACE_LINES_PER_SECOND; the rest are counted and reported as one line.

export const TRACE_LINES_PER_SECOND = 50;

/** Longest frame shown in full; longer ones are cut with their length given. */
const MAX_SHOWN_BYTES = 64;

export function tracedLink(link: Link, busName: string, log: Logger, now: () => number = () => performance.now()): Link {
  let sentAt = 0;
  let windowStart = 0;
  let linesInWindow = 0;
  let suppressed = 0;
  const trace = (text: string) => {
    const at = now();
    if (at - windowStart >= 1000) {
      if (suppressed > 0) log.debug(`modbus ${busName}: ${suppressed} trace lines left out in the last second (at most ${TRACE_LINES_PER_SECOND}/s)`);
      windowStart = at;
      linesInWindow = 0;
      suppressed = 0;
    }
    if (linesInWindow >= TRACE_LINES_PER_SECOND) {
      suppressed++;
      return;
    }
    linesInWindow++;
    log.debug(`modbus ${busName}: ${text}`);
  };
  return {
    framing: link.framing,
    get spec() {
      return link.spec;
    },
    silenceMs: link.silenceMs,
    open(handlers) {
      return link.open({
        data(chunk) {
          trace(`rx ${hex(chunk)} (+${(now() - sentAt).toFixed(1)} ms)`);
          handlers.data(chunk);
        },
        closed(reason) {
          trace(`closed: ${reason}`);
          handlers.closed(reason);
        },
      });
    },
    write(frame) {
      sentAt = now();
      trace(`tx ${hex(frame)}`);
      link.write(frame);
    },
    close: () => link.close(),
  };
}

export function hex(bytes: Buffer): string {
  const shown = bytes.subarray(0, MAX_SHOWN_BYTES).toString('hex').replace(/(..)(?!$)/g, '$1 ');
  return bytes.length > MAX_SHOWN_BYTES ? `${shown} ... (${bytes.length} bytes)` : shown;
}
