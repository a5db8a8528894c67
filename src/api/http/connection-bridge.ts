import type { Socket } from 'node:net';
import { Duplex } from 'node:stream';

// Carries the requests of one parked connection (see parking.ts) into HTTP.
// HTTP accepts any Duplex as a connection; this one forwards the socket's
// bytes in and HTTP's replies out. It exists only while a request is being
// read or answered: HTTP's per-connection state (parser, listeners, about
// 4 KB) goes with it, and the socket waits for its next request with nothing
// attached but the parking lot's one listener.
//
// Ending or destroying the bridge closes the socket, since HTTP does so on
// `Connection: close`, errors and timeouts; except after `detach()`, when the
// lot takes the socket back between requests. Anything HTTP still writes
// then is an error reply to a request cut short (a partial head), and the
// socket is closed rather than left with half a conversation.

const ignoreError = (): void => undefined;

export class ConnectionBridge extends Duplex {
  /** Requests whose head HTTP has parsed and whose reply has not finished. */
  inFlight = 0;
  /** Bytes handed to HTTP since the last reply finished: a next request has begun. */
  begun = false;
  private detaching = false;
  private inputEnded = false;

  constructor(
    readonly socket: Socket,
    private readonly onClosed: (bridge: ConnectionBridge, socketKept: boolean) => void,
  ) {
    super({ decodeStrings: false });
    // HTTP listens while it holds the bridge; this keeps a late error (a
    // write after the socket closed) heard after an upgrade took the socket
    // away. Errors are counted on the socket, where admission watches it:
    // its own, and HTTP's (a request it cannot parse) passed on by _destroy.
    this.on('error', ignoreError);
  }

  // What HTTP and the route handlers ask of a connection.
  get remoteAddress(): string | undefined {
    return this.socket.remoteAddress;
  }
  get remotePort(): number | undefined {
    return this.socket.remotePort;
  }
  get remoteFamily(): string | undefined {
    return this.socket.remoteFamily;
  }
  get localAddress(): string | undefined {
    return this.socket.localAddress;
  }
  get localPort(): number | undefined {
    return this.socket.localPort;
  }
  /** HTTP's deadlines for heads and requests are kept by its own connection check; idle time is the lot's. */
  setTimeout(): this {
    return this;
  }
  setNoDelay(): this {
    return this;
  }
  setKeepAlive(): this {
    return this;
  }

  /** Bytes from the socket, for HTTP. */
  deliver(chunk: Buffer): void {
    if (this.inputEnded) return;
    if (this.inFlight === 0) this.begun = true;
    if (!this.push(chunk)) this.socket.pause();
  }

  /** The client closed its sending side. */
  endInput(): void {
    if (this.inputEnded) return;
    this.inputEnded = true;
    this.push(null);
  }

  /** Between requests: HTTP lets go of the connection, the socket stays open. */
  detach(): void {
    if (this.inputEnded) return;
    this.detaching = true;
    this.endInput();
  }

  override _read(): void {
    if (!this.detaching && this.socket.isPaused()) this.socket.resume();
  }

  override _write(chunk: Buffer, encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    if (this.detaching) {
      this.socket.destroy();
      callback();
      return;
    }
    if (this.socket.destroyed) {
      callback(new Error('connection closed'));
      return;
    }
    this.socket.write(chunk, encoding, callback);
  }

  /**
   * HTTP corks a reply (head, then body) and hands it over in one go: written
   * corked to the socket, it leaves in one system call, as from an HTTP
   * connection of its own, instead of one per piece.
   */
  override _writev(chunks: Array<{ chunk: Buffer | string; encoding: BufferEncoding }>, callback: (error?: Error | null) => void): void {
    if (this.detaching || this.socket.destroyed) {
      this._write(chunks[0]!.chunk as Buffer, chunks[0]!.encoding, callback);
      return;
    }
    const last = chunks.length - 1;
    this.socket.cork();
    for (let i = 0; i < last; i++) this.socket.write(chunks[i]!.chunk, chunks[i]!.encoding);
    this.socket.write(chunks[last]!.chunk, chunks[last]!.encoding, callback);
    this.socket.uncork();
  }

  override _final(callback: (error?: Error | null) => void): void {
    if (!this.detaching) this.socket.end();
    callback();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    if (!this.detaching) this.socket.destroy(error ?? undefined);
    this.onClosed(this, this.detaching && !this.socket.destroyed);
    callback(error);
  }
}
