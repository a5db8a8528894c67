import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, constants, openSync, readSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { readOnce, writeNow } from '../../../src/transport/eof-safe-binding.js';
import { tempDir } from '../../helpers/temp-dir.js';

// The serial port's reads and writes on its non-blocking descriptor, on the
// main thread: a FIFO opened read-write and non-blocking stands in for the
// port (it fills up and runs dry as a tty does), and a hand-made poller says
// when it is readable.

let fd: number;

before(() => {
  const fifo = join(tempDir('iogate-serial-binding-'), 'line');
  execFileSync('mkfifo', [fifo]);
  fd = openSync(fifo, constants.O_RDWR | constants.O_NONBLOCK);
});

after(() => closeSync(fd));

/** A port over the FIFO whose poller counts how often it was asked to wait. */
function port() {
  const waits = { count: 0 };
  return {
    waits,
    port: {
      fd,
      isOpen: true,
      poller: {
        once(_event: 'readable', callback: (error?: Error | null) => void) {
          waits.count++;
          setImmediate(callback);
        },
      },
      read: () => Promise.reject(new Error('the binding is not asked to read')),
    },
  };
}

/** Empties the FIFO, returning what it held. */
function drain(): Buffer {
  const chunks: Buffer[] = [];
  const buffer = Buffer.alloc(65536);
  for (;;) {
    try {
      const n = readSync(fd, buffer, 0, buffer.length, null);
      chunks.push(Buffer.from(buffer.subarray(0, n)));
    } catch (error) {
      assert.equal((error as { code?: string }).code, 'EAGAIN');
      return Buffer.concat(chunks);
    }
  }
}

test('a frame is written at once, without the binding', async () => {
  const handedOn: Buffer[] = [];
  const frame = Buffer.from([1, 3, 0, 0, 0, 2, 0xc4, 0x0b]);
  await writeNow(port().port, frame, async (rest) => void handedOn.push(rest));
  assert.deepEqual(handedOn, []);
  assert.deepEqual(drain(), frame);
});

test('what the kernel does not take goes to the binding, in order, and nothing twice', async () => {
  const handedOn: Buffer[] = [];
  const big = Buffer.alloc(200_000, 0);
  for (let i = 0; i < big.length; i++) big[i] = i % 251;
  await writeNow(port().port, big, async (rest) => void handedOn.push(rest));
  assert.equal(handedOn.length, 1);
  const taken = drain();
  assert.ok(taken.length > 0 && taken.length < big.length, `${taken.length} bytes taken`);
  assert.deepEqual(Buffer.concat([taken, handedOn[0]!]), big);
});

test('a full line (EAGAIN) hands the whole frame to the binding', async () => {
  const filler = Buffer.alloc(65536, 7);
  try {
    for (;;) writeSync(fd, filler);
  } catch (error) {
    assert.equal((error as { code?: string }).code, 'EAGAIN');
  }
  const handedOn: Buffer[] = [];
  const frame = Buffer.from([1, 5, 0, 2, 0xff, 0]);
  await writeNow(port().port, frame, async (rest) => void handedOn.push(rest));
  assert.deepEqual(handedOn, [frame]);
  drain();
});

test('a read waits for the poller, and a wake-up with nothing to read waits again', async () => {
  const { port: p, waits } = port();
  const buffer = Buffer.alloc(64);
  // Nothing there at the first wake-up; the reply arrives before the second.
  let wakeUps = 0;
  p.poller.once = (_event, callback) => {
    waits.count++;
    if (++wakeUps === 2) writeSync(fd, Buffer.from([1, 3, 4, 0, 7, 0, 9]));
    setImmediate(callback);
  };
  const { bytesRead } = await readOnce(p, buffer, 0, buffer.length);
  assert.equal(waits.count, 2);
  assert.deepEqual(buffer.subarray(0, bytesRead), Buffer.from([1, 3, 4, 0, 7, 0, 9]));
});

test('a closed port is not read', async () => {
  const { port: p } = port();
  await assert.rejects(readOnce({ ...p, isOpen: false }, Buffer.alloc(8), 0, 8), /not open/);
});
