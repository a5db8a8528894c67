import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TRACE_LINES_PER_SECOND, tracedLink } from '../../../src/transport/traced-link.js';
import type { Link, LinkHandlers } from '../../../src/transport/link.js';
import { spawnDaemon } from '../../helpers/spawn-daemon.js';

// --debug: a per-bus trace of the frames, in hex with timing, rate-limited so
// a line polled at 50 Hz cannot fill the disk.

function recordingLog() {
  const lines: string[] = [];
  const log = { debug: (m: string) => lines.push(m), info: () => undefined, warn: () => undefined, error: () => undefined };
  return { lines, log };
}

test('frames in hex with the time since the request; at most TRACE_LINES_PER_SECOND lines a second, the rest counted', async () => {
  let clock = 0;
  let handlers: LinkHandlers | undefined;
  const written: Buffer[] = [];
  const inner: Link = {
    framing: 'RTU',
    spec: '/dev/ttyNS0',
    silenceMs: 2,
    async open(h) {
      handlers = h;
    },
    write: (frame) => written.push(frame),
    close: async () => undefined,
  };
  const { lines, log } = recordingLog();
  const link = tracedLink(inner, 'RS485', log, () => clock);
  await link.open({ data: () => undefined, closed: () => undefined });
  link.write(Buffer.from([0x01, 0x03, 0x00, 0x00, 0x00, 0x02, 0xc4, 0x0b]));
  clock = 12.34;
  handlers!.data(Buffer.from([0x01, 0x03, 0x04, 0x00, 0x01, 0x00, 0x00, 0xab, 0xf3]));
  assert.deepEqual(lines, ['modbus RS485: tx 01 03 00 00 00 02 c4 0b', 'modbus RS485: rx 01 03 04 00 01 00 00 ab f3 (+12.3 ms)']);
  assert.equal(written.length, 1, 'the frame still goes out');

  // A burst within the same second: the cap, then one line with the count.
  for (let i = 0; i < 200; i++) link.write(Buffer.from([0x01]));
  assert.equal(lines.length, TRACE_LINES_PER_SECOND);
  clock = 1100;
  link.write(Buffer.from([0x02]));
  assert.equal(lines[TRACE_LINES_PER_SECOND], `modbus RS485: ${202 - TRACE_LINES_PER_SECOND} trace lines left out in the last second (at most ${TRACE_LINES_PER_SECOND}/s)`);
  assert.equal(lines.at(-1), 'modbus RS485: tx 02');
});

test('the daemon with --debug traces its buses by name; without it, nothing', async () => {
  const debug = await spawnDaemon(['--debug']);
  try {
    await waitFor(() => /^DEBUG modbus SIMULATED: rx 01 /m.test(debug.output()));
    assert.match(debug.output(), /^DEBUG modbus SIMULATED: tx 01 0[1-6] [0-9a-f ]+$/m);
    assert.match(debug.output(), /^DEBUG modbus SIMULATED: rx 01 [0-9a-f ]+ \(\+\d+\.\d ms\)$/m);
  } finally {
    assert.equal(await debug.stop(), 0);
  }
  const quiet = await spawnDaemon([]);
  assert.equal(await quiet.stop(), 0);
  assert.doesNotMatch(quiet.output(), /modbus SIMULATED: tx/);
});

async function waitFor(condition: () => boolean, limitMs = 10_000): Promise<void> {
  const until = Date.now() + limitMs;
  while (!condition()) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
