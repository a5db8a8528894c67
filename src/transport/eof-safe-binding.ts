import { readSync, writeSync } from 'node:fs';

// A guard around serialport's Unix binding against a read loop that spins,
// and its reads and writes without a thread-pool round trip.
//
// Cause (@serialport/bindings-cpp 12.0.1, serialport 12.0.0, Linux): its
// read treats a read() that returns 0 bytes as "nothing yet" and reads again
// at once, recursively. 0 bytes is end-of-file: the other end of a pty is gone
// (socat stopped) or a tty hung up. Unless the poller's "disconnect" event
// happens to win the race (about half the time here), the port never closes:
// the loop takes a core and its growing chain of promises eats memory (seen
// at 3.6 GB). The same can happen when a USB-RS485 adapter is pulled.
//
// The guard reads the descriptor itself: end-of-file and I/O errors are
// reported as a disconnect, which the stream turns into 'close', so the bus
// closes the port and reopens it with back-off. Only ports with the Unix
// binding's shape (a descriptor and a poller) are wrapped; others pass as they are.
//
// Cost: the binding reads and writes with fs.read/fs.write, each a trip
// through libuv's thread pool (a queued job, a worker thread woken, its
// result handed back), and a read that finds nothing costs a trip too. On a
// line of hundreds of transactions a second that was most of the daemon's
// CPU per transaction (bench/modbus-server-vs-mbusd.mjs, polling off: 1.6 ms
// per request, the JS itself a fraction of it). The binding opens the port
// O_NONBLOCK, so a read or write on the main thread never blocks: it moves
// what the kernel has or takes now, or fails with EAGAIN, and only then does
// the guard wait for the poller (reads) or hand the rest to the binding
// (writes, which waits for the poller the same way).

interface Poller {
  once(event: 'readable', callback: (error?: Error | null) => void): void;
}

/** The parts of @serialport/bindings-cpp's Linux/Darwin port binding this relies on. */
interface UnixPort {
  readonly fd: number | null;
  readonly poller: Poller;
  readonly isOpen: boolean;
  read(buffer: Buffer, offset: number, length: number): Promise<{ bytesRead: number; buffer: Buffer }>;
  [member: string]: unknown;
}

export interface Binding {
  open(options: any): Promise<unknown>;
  list(): Promise<unknown[]>;
}

/** Error codes after which the descriptor will never deliver data again. */
const DEAD = new Set(['EIO', 'EBADF', 'ENXIO', 'ENODEV', 'UNKNOWN']);
const TRY_AGAIN = new Set(['EAGAIN', 'EWOULDBLOCK', 'EINTR']);

function disconnect(message: string, code: string): Error {
  return Object.assign(new Error(message), { code, disconnect: true });
}

function canceled(): Error {
  return Object.assign(new Error('Port is not open'), { canceled: true });
}

function isUnixPort(port: unknown): port is UnixPort {
  const candidate = port as Partial<UnixPort> | null;
  return typeof candidate?.fd === 'number' && typeof candidate.poller?.once === 'function';
}

function readable(port: UnixPort): Promise<void> {
  return new Promise<void>((resolve, reject) => port.poller.once('readable', (failure) => (failure ? reject(failure) : resolve())));
}

/**
 * Reads at least one byte, or fails: never loops on end-of-file. The stream
 * asks again as soon as it has taken a chunk, when the line is almost always
 * quiet, and a read that finds nothing costs a thrown EAGAIN: so the poller
 * is asked first (end-of-file and hang-up wake it too), and a wake-up with
 * nothing to read waits again.
 */
export async function readOnce(port: UnixPort, buffer: Buffer, offset: number, length: number): Promise<{ bytesRead: number; buffer: Buffer }> {
  for (;;) {
    if (!port.isOpen || port.fd === null) throw canceled();
    await readable(port);
    const fd = port.fd;
    if (!port.isOpen || fd === null) throw canceled();
    try {
      // Non-blocking descriptor: returns what is there or throws EAGAIN at once.
      const bytesRead = readSync(fd, buffer, offset, length, null);
      if (bytesRead === 0) throw disconnect('end of file: the device is gone (or the other end of the pty closed)', 'EOF');
      return { bytesRead, buffer };
    } catch (error) {
      const { code, disconnect: alreadyMarked } = error as { code?: string; disconnect?: boolean };
      if (alreadyMarked) throw error;
      if (code !== undefined && TRY_AGAIN.has(code)) continue;
      if (code !== undefined && DEAD.has(code)) (error as { disconnect?: boolean }).disconnect = true;
      throw error;
    }
  }
}

/** Writes what the kernel takes now; the rest, if any, goes through the binding's own write. */
export function writeNow(port: UnixPort, buffer: Buffer, write: (buffer: Buffer) => Promise<void>): Promise<void> {
  const fd = port.fd;
  if (!port.isOpen || fd === null || buffer.length === 0) return write(buffer);
  let written: number;
  try {
    written = writeSync(fd, buffer, 0, buffer.length);
  } catch {
    // EAGAIN (the tty's buffer is full) or a failure: the binding waits for
    // the poller, or reports the failure as it always did.
    return write(buffer);
  }
  return written >= buffer.length ? Promise.resolve() : write(buffer.subarray(written));
}

/** `base` with every Unix port it opens guarded against the end-of-file read loop. */
export function eofSafeBinding<B extends Binding>(base: B): B {
  return {
    ...base,
    list: () => base.list(),
    async open(options: unknown) {
      const port = await base.open(options);
      if (!isUnixPort(port)) return port;
      // The port object keeps its own methods (close, drain, set…); only read and write are ours.
      const write = (port.write as (buffer: Buffer) => Promise<void>).bind(port);
      return new Proxy(port, {
        get(target, property, receiver) {
          if (property === 'read') return (buffer: Buffer, offset: number, length: number) => readOnce(target, buffer, offset, length);
          if (property === 'write') return (buffer: Buffer) => writeNow(target, buffer, write);
          const value = Reflect.get(target, property, receiver) as unknown;
          return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
        },
      });
    },
  };
}
