import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { closeSync, constants, openSync, readSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { startPortIo } from '../../../src/transport/serial-port-io.js';
import { tempDir } from '../../helpers/temp-dir.js';

// The serial port's reads and writes on its non-blocking descriptor, on the
// main thread: a FIFO opened read-write and non-blocking stands in for the
// port (it fills up and runs dry as a tty does), and a hand-made poller says
// when it is readable.

let dir: string;
let fd: number;

before(() => {
  dir = tempDir('iogate-serial-port-io-');
  const fifo = join(dir, 'line');
  execFileSync('mkfifo', [fifo]);
  fd = openSync(fifo, constants.O_RDWR | constants.O_NONBLOCK);
});

after(() => closeSync(fd));

/** A poller that wakes its listener on the next turn of the loop each time it is asked to poll. */
class FakePoller extends EventEmitter {
  polls = 0;
  beforeWake: () => void = () => {};
  poll(): void {
    this.polls++;
    setImmediate(() => {
      this.beforeWake();
      this.emit('readable', null);
    });
  }
}

/** A port over `descriptor` whose binding write records what it was handed. */
function port(descriptor = fd) {
  const handedOn: Buffer[] = [];
  return {
    handedOn,
    port: {
      fd: descriptor,
      isOpen: true,
      poller: new FakePoller(),
      read: () => Promise.reject(new Error('the binding is not asked to read')),
      write: async (rest: Buffer): Promise<void> => void handedOn.push(Buffer.from(rest)),
      close: async () => {},
    },
  };
}

const ignore = { data: () => {}, failed: (error: Error) => assert.fail(error) };

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

/** Resolves once the binding's writes (promises) have run. */
const settled = () => new Promise((resolve) => setImmediate(resolve));

test('a frame is written at once, without the binding', async () => {
  const { port: p, handedOn } = port();
  p.poller.poll = () => {};
  const io = startPortIo(p, ignore);
  const frame = Buffer.from([1, 3, 0, 0, 0, 2, 0xc4, 0x0b]);
  io.write(frame);
  io.stop();
  await settled();
  assert.deepEqual(handedOn, []);
  assert.deepEqual(drain(), frame);
});

test('what the kernel does not take goes to the binding, in order, and later frames after it', async () => {
  const { port: p, handedOn } = port();
  p.poller.poll = () => {};
  const io = startPortIo(p, ignore);
  const big = Buffer.alloc(200_000, 0);
  for (let i = 0; i < big.length; i++) big[i] = i % 251;
  const next = Buffer.from([1, 6, 0, 1, 0, 1]);
  io.write(big);
  io.write(next);
  await settled();
  assert.equal(handedOn.length, 2);
  const taken = drain();
  assert.ok(taken.length > 0 && taken.length < big.length, `${taken.length} bytes taken`);
  assert.deepEqual(Buffer.concat([taken, handedOn[0]!]), big);
  assert.deepEqual(handedOn[1], next);
  // Once the binding is done, a frame is written at once again.
  io.write(next);
  await settled();
  assert.equal(handedOn.length, 2);
  assert.deepEqual(drain(), next);
  io.stop();
});

test('a full line (EAGAIN) hands the whole frame to the binding', async () => {
  const filler = Buffer.alloc(65536, 7);
  try {
    for (;;) writeSync(fd, filler);
  } catch (error) {
    assert.equal((error as { code?: string }).code, 'EAGAIN');
  }
  const { port: p, handedOn } = port();
  p.poller.poll = () => {};
  const io = startPortIo(p, ignore);
  const frame = Buffer.from([1, 5, 0, 2, 0xff, 0]);
  io.write(frame);
  await settled();
  assert.deepEqual(handedOn, [frame]);
  drain();
  io.stop();
});

test('a port that takes nothing is failed, not sent a growing backlog', async () => {
  const filler = Buffer.alloc(65536, 7);
  try {
    for (;;) writeSync(fd, filler);
  } catch (error) {
    assert.equal((error as { code?: string }).code, 'EAGAIN');
  }
  const { port: p } = port();
  p.poller.poll = () => {};
  // The binding's write never completes: the adapter stalled.
  p.write = () => new Promise<void>(() => {});
  const failures: Error[] = [];
  const io = startPortIo(p, { data: () => {}, failed: (error) => failures.push(error) });
  const frame = Buffer.from([1, 3, 0, 0, 0, 2, 0xc4, 0x0b]);
  for (let i = 0; i < 4; i++) io.write(frame);
  await settled();
  assert.equal(failures.length, 0);
  io.write(frame);
  assert.equal(failures.length, 1);
  assert.match(failures[0]!.message, /4 frames wait behind one the port has not taken/);
  drain();
});

test('reads wait for the poller, a wake-up with nothing to read waits again, and each chunk is handed on', async () => {
  const { port: p } = port();
  const reply = Buffer.from([1, 3, 4, 0, 7, 0, 9]);
  const chunks: Buffer[] = [];
  let wakeUps = 0;
  // Nothing there at the first wake-up; the reply arrives before the second.
  p.poller.beforeWake = () => {
    if (++wakeUps === 2) writeSync(fd, reply);
  };
  let io: ReturnType<typeof startPortIo> | undefined;
  const got = new Promise<void>((resolve) => {
    io = startPortIo(p, {
      data: (chunk) => {
        chunks.push(Buffer.from(chunk));
        resolve();
      },
      failed: (error) => assert.fail(error),
    });
  });
  await got;
  assert.equal(wakeUps, 2);
  assert.deepEqual(Buffer.concat(chunks), reply);
  // And it waits for the next reply.
  await settled();
  assert.ok(p.poller.polls >= 3);
  io!.stop();
});

test('end of file fails the port once, and it is not read again', async () => {
  // A FIFO whose writer is gone reads 0 bytes: end of file, as a pty whose peer closed.
  const fifo = join(dir, 'gone');
  execFileSync('mkfifo', [fifo]);
  const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
  closeSync(openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK));
  try {
    const { port: p } = port(reader);
    const failures: Error[] = [];
    startPortIo(p, { data: () => assert.fail('no data'), failed: (error) => failures.push(error) });
    await settled();
    await settled();
    assert.equal(failures.length, 1);
    assert.match(failures[0]!.message, /end of file/);
    assert.equal(p.poller.polls, 1);
    assert.equal(p.poller.listenerCount('readable'), 0);
  } finally {
    closeSync(reader);
  }
});

test('a stopped port is neither read nor written', async () => {
  const { port: p, handedOn } = port();
  writeSync(fd, Buffer.from([9, 9]));
  const io = startPortIo(p, { data: () => assert.fail('no data after stop'), failed: (error) => assert.fail(error) });
  io.stop();
  io.write(Buffer.from([1, 2, 3]));
  await settled();
  assert.deepEqual(handedOn, []);
  assert.deepEqual(drain(), Buffer.from([9, 9]));
});
