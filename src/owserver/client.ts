import { connect } from 'node:net';
import type { Duplex } from 'node:stream';
import { MESSAGE, MessageReader, OwProtocolError, encodeRequest, replyText, type Message } from './protocol.js';

// A small owserver client. Every request opens its own connection, sends one
// message, reads the reply and closes, as owserver expects from a client that
// does not ask for persistence. So no connection is ever held while owserver
// restarts or dies, and a request that is not answered within its deadline
// is abandoned with its socket.

/** Why a request failed: owserver not reachable, no answer in time, a reply we cannot read, or an error owserver reported. */
export type OwErrorKind = 'unreachable' | 'timeout' | 'protocol' | 'server';

export class OwserverError extends Error {
  constructor(
    readonly kind: OwErrorKind,
    message: string,
  ) {
    super(message);
    this.name = 'OwserverError';
  }
}

/** Opens a byte stream to owserver: a TCP socket, or an in-memory one to a simulated server. */
export type Dialer = () => Duplex;

export function tcpDialer(host: string, port: number): Dialer {
  return () => connect({ host, port, noDelay: true });
}

export interface OwserverClientOptions {
  dial: Dialer;
  /** Deadline of one request, connecting included, in ms. */
  timeoutMs: number;
  /** For messages: `127.0.0.1:4304`. */
  where: string;
}

/** Most directory entries accepted from a DIR listing (one message per entry). */
const MAX_DIR_ENTRIES = 4096;

export class OwserverClient {
  readonly where: string;
  private readonly dial: Dialer;
  private readonly timeoutMs: number;
  /** Connections of requests under way, so stopping does not wait for their deadlines. */
  private readonly open = new Set<Duplex>();

  constructor({ dial, timeoutMs, where }: OwserverClientOptions) {
    this.dial = dial;
    this.timeoutMs = timeoutMs;
    this.where = where;
  }

  /** Entries of a directory, as full paths (`/28.95DCD5090000.35`), in one DIRALL exchange. */
  async dirall(path: string): Promise<string[]> {
    const [reply] = await this.exchange(MESSAGE.DIRALL, path, () => true);
    const text = replyText(reply!);
    return text === '' ? [] : text.split(',');
  }

  /** The same listing with DIR, one message per entry; for servers without DIRALL. */
  async dir(path: string): Promise<string[]> {
    const replies = await this.exchange(MESSAGE.DIR, path, (message, count) => {
      if (count > MAX_DIR_ENTRIES) throw new OwProtocolError(`more than ${MAX_DIR_ENTRIES} directory entries`);
      return message.payloadLength === 0;
    });
    return replies.slice(0, -1).map(replyText);
  }

  /** Ends every request under way (each fails); for shutdown. */
  abortAll(): void {
    for (const socket of this.open) socket.destroy();
  }

  /** A property's text as owserver formats it, e.g. `     23.4375` or `DS18B20`. */
  async read(path: string): Promise<string> {
    const [reply] = await this.exchange(MESSAGE.READ, path, () => true);
    return replyText(reply!);
  }

  /** A numeric property; a reply that is not a number is a protocol error. */
  async readNumber(path: string): Promise<number> {
    const text = (await this.read(path)).trim();
    const value = Number(text);
    if (text === '' || !Number.isFinite(value)) throw new OwserverError('protocol', `${path}: ${JSON.stringify(text.slice(0, 40))} is not a number`);
    return value;
  }

  /**
   * Sends one request and collects replies (keep-alives skipped) until `last`
   * says the exchange is complete. A reply with a negative return value is
   * owserver's error for the path.
   */
  private exchange(type: number, path: string, last: (message: Message, count: number) => boolean): Promise<Message[]> {
    return new Promise((resolve, reject) => {
      let socket: Duplex;
      try {
        socket = this.dial();
      } catch (error) {
        reject(new OwserverError('unreachable', `owserver ${this.where}: ${(error as Error).message}`));
        return;
      }
      const reader = new MessageReader();
      const replies: Message[] = [];
      let settled = false;
      this.open.add(socket);
      const finish = (error: OwserverError | undefined) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        this.open.delete(socket);
        socket.destroy();
        if (error) reject(error);
        else resolve(replies);
      };
      const timer = setTimeout(() => finish(new OwserverError('timeout', `owserver ${this.where}: no answer to ${path} within ${this.timeoutMs} ms`)), this.timeoutMs);
      socket.on('error', (error: NodeJS.ErrnoException) => {
        const kind = replies.length === 0 && isConnectError(error) ? 'unreachable' : 'protocol';
        finish(new OwserverError(kind, `owserver ${this.where}: ${error.message}`));
      });
      const closed = () => finish(new OwserverError('protocol', `owserver ${this.where}: connection closed before the reply to ${path} was complete`));
      socket.on('end', closed);
      socket.on('close', closed);
      socket.on('data', (chunk: Buffer) => {
        if (settled) return;
        try {
          for (const message of reader.push(chunk)) {
            if (message.payloadLength < 0) continue;
            if (message.typeOrRet < 0) {
              finish(new OwserverError('server', `owserver ${this.where}: ${path}: error ${-message.typeOrRet}`));
              return;
            }
            replies.push(message);
            if (last(message, replies.length)) {
              finish(undefined);
              return;
            }
          }
        } catch (error) {
          finish(new OwserverError('protocol', `owserver ${this.where}: ${path}: ${(error as Error).message}`));
        }
      });
      socket.write(encodeRequest({ type, path }));
    });
  }
}

function isConnectError(error: NodeJS.ErrnoException): boolean {
  return ['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL', 'ENOTFOUND', 'EAI_AGAIN'].includes(error.code ?? '');
}
