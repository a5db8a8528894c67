import { readSync, writeSync } from 'node:fs';

// The serial port's reads and writes, made by iogate on the port's
// descriptor; serialport opens, configures, locks and closes the port.
//
// Why not serialport's stream: on a line of hundreds of transactions a second
// its layers were most of the daemon's CPU per transaction (bench/
// modbus-server-vs-mbusd.mjs, polling off). The binding reads and writes with
// fs.read/fs.write, each a trip through libuv's thread pool; the stream asks
// for the next read as soon as it has a chunk (a promise, a poller re-armed,
// a read that finds nothing), and every chunk goes through a Readable's
// buffering and a pool buffer of its own. Here a reply costs one poller
// wake-up, one read() on the main thread and one call of the data handler
// with a view of a buffer that is reused; a request is one write().
//
// End-of-file (@serialport/bindings-cpp 12.0.1, Linux): the binding's own read
// treats a read() that returns 0 bytes as "nothing yet" and reads again at
// once, recursively. 0 bytes is end-of-file: the other end of a pty is gone
// (socat stopped), a tty hung up, a USB-RS485 adapter was pulled. Its loop
// took a core and its chain of promises grew to gigabytes unless the poller's
// "disconnect" won the race. Here end-of-file and I/O errors end the port:
// it is closed and the owner told, as the stream did for any read or write
// error, and the bus reopens it with back-off.
//
// The binding opens the port O_NONBLOCK, so a read or write on the main thread
// never blocks: it moves what the kernel has or takes now, or fails with
// EAGAIN. A read is made only once the poller says there is something (or the
// line hung up); a frame the kernel does not take whole (a full output buffer)
// goes, the rest of it, through the binding's own write, which waits for the
// poller, and later frames queue behind it.

/** What a port binding offers every platform (@serialport/bindings-interface's BindingPortInterface). */
export interface BindingPort {
  readonly isOpen: boolean;
  read(buffer: Buffer, offset: number, length: number): Promise<{ bytesRead: number; buffer: Buffer }>;
  write(buffer: Buffer): Promise<void>;
  close(): Promise<void>;
}

interface Poller {
  on(event: 'readable', listener: (error?: Error | null) => void): unknown;
  removeListener(event: 'readable', listener: (error?: Error | null) => void): unknown;
  /** Asks for the next event of the flag's kind (the poller forgets it once it came). */
  poll(eventFlag: number): void;
}

/** The parts of @serialport/bindings-cpp's Linux/Darwin port binding that the descriptor path relies on. */
interface UnixPort extends BindingPort {
  readonly fd: number | null;
  readonly poller: Poller;
}

export interface PortHandlers {
  /** Bytes received; a view that is only valid during the call (the buffer is reused). */
  data(chunk: Buffer): void;
  /** The port failed (end-of-file, an I/O error); it is being closed. Told at most once. */
  failed(error: Error): void;
}

export interface PortIo {
  write(frame: Buffer): void;
  /** Stops reading and writing; the owner closes the port. */
  stop(): void;
}

/** The poller's flag for "readable" (@serialport/bindings-cpp's EVENTS.UV_READABLE). */
const UV_READABLE = 1;
/** A Modbus RTU frame is at most 256 bytes; a read takes what is there up to this. */
const READ_SIZE = 1024;
const TRY_AGAIN = new Set(['EAGAIN', 'EWOULDBLOCK', 'EINTR']);
/**
 * Frames that may wait behind one the kernel did not take. The bus has one
 * transaction on the wire at a time, so more mean the port takes nothing
 * (a stalled adapter): it is failed and reopened rather than sent a backlog
 * of requests that are stale by the time they would go.
 */
const MAX_WAITING_WRITES = 4;

function endOfFile(): Error {
  return Object.assign(new Error('end of file: the device is gone (or the other end of the pty closed)'), { code: 'EOF' });
}

function isUnixPort(port: BindingPort): port is UnixPort {
  const candidate = port as Partial<UnixPort>;
  return typeof candidate.fd === 'number' && typeof candidate.poller?.poll === 'function' && typeof candidate.poller.on === 'function';
}

/** Starts reading `port` and returns its writer. */
export function startPortIo(port: BindingPort, handlers: PortHandlers): PortIo {
  return isUnixPort(port) ? descriptorIo(port, handlers) : bindingIo(port, handlers);
}

function descriptorIo(port: UnixPort, handlers: PortHandlers): PortIo {
  const buffer = Buffer.allocUnsafe(READ_SIZE);
  let stopped = false;
  /** The binding's write of what the kernel did not take at once; later frames go after it. */
  let writing: Promise<void> | undefined;
  let waitingWrites = 0;

  const fail = (error: Error): void => {
    if (stopped) return;
    stop();
    handlers.failed(error);
  };

  const onReadable = (failure?: Error | null): void => {
    if (stopped) return;
    if (failure) {
      // The poller is stopped when the port closes: not news.
      if (!(failure as { canceled?: boolean }).canceled) fail(failure);
      return;
    }
    const fd = port.fd;
    if (fd === null || !port.isOpen) return;
    for (;;) {
      let bytesRead: number;
      try {
        bytesRead = readSync(fd, buffer, 0, READ_SIZE, null);
      } catch (error) {
        const code = (error as { code?: string }).code;
        // A wake-up with nothing to read (or a signal): wait for the next.
        if (code !== undefined && TRY_AGAIN.has(code)) break;
        fail(error as Error);
        return;
      }
      if (bytesRead === 0) {
        fail(endOfFile());
        return;
      }
      handlers.data(buffer.subarray(0, bytesRead));
      if (stopped) return;
      // Less than asked for: the kernel had no more. Reading on would only find EAGAIN, a thrown error.
      if (bytesRead < READ_SIZE) break;
    }
    port.poller.poll(UV_READABLE);
  };

  const stop = (): void => {
    stopped = true;
    port.poller.removeListener('readable', onReadable);
  };

  const writeLater = (rest: Buffer): void => {
    if (waitingWrites >= MAX_WAITING_WRITES) {
      fail(new Error(`${MAX_WAITING_WRITES} frames wait behind one the port has not taken`));
      return;
    }
    waitingWrites++;
    const previous = writing ?? Promise.resolve();
    const write: Promise<void> = previous
      .then(() => (stopped ? undefined : port.write(rest)))
      .then(
        () => {
          waitingWrites--;
          if (writing === write) writing = undefined;
        },
        (error: Error & { canceled?: boolean }) => {
          if (!error.canceled) fail(error);
        },
      );
    writing = write;
  };

  port.poller.on('readable', onReadable);
  port.poller.poll(UV_READABLE);

  return {
    write(frame) {
      const fd = port.fd;
      if (stopped || fd === null || !port.isOpen || frame.length === 0) return;
      if (writing) return writeLater(frame);
      let written: number;
      try {
        written = writeSync(fd, frame, 0, frame.length);
      } catch (error) {
        const code = (error as { code?: string }).code;
        // The tty's buffer is full: the binding waits for the poller.
        if (code !== undefined && TRY_AGAIN.has(code)) return writeLater(frame);
        return fail(error as Error);
      }
      if (written < frame.length) writeLater(frame.subarray(written));
    },
    stop,
  };
}

/** Any other binding (Windows): its own promise-based reads, one after another. */
function bindingIo(port: BindingPort, handlers: PortHandlers): PortIo {
  const buffer = Buffer.allocUnsafe(READ_SIZE);
  let stopped = false;
  let writing: Promise<void> = Promise.resolve();
  const fail = (error: Error & { canceled?: boolean }): void => {
    if (stopped || error.canceled) return;
    stopped = true;
    handlers.failed(error);
  };
  const readLoop = async (): Promise<void> => {
    while (!stopped && port.isOpen) {
      const { bytesRead } = await port.read(buffer, 0, READ_SIZE);
      if (stopped) return;
      if (bytesRead === 0) throw endOfFile();
      handlers.data(buffer.subarray(0, bytesRead));
    }
  };
  readLoop().catch(fail);
  return {
    write(frame) {
      if (stopped) return;
      writing = writing.then(() => (stopped ? undefined : port.write(frame))).catch(fail);
    },
    stop() {
      stopped = true;
    },
  };
}
