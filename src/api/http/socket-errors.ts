import type { Duplex } from 'node:stream';
import type { Logger } from '../../logging/log.js';

// Errors of client connections: a reset, a broken pipe, a kernel timeout, and
// the parse errors node:http closes a connection with.
// They are the client's business, never the daemon's: each is logged at
// DEBUG, counted for /metrics, and the socket closes as it would anyway.
//
// Every socket the HTTP server accepts gets this listener first thing
// (admission.ts), before HTTP, the parking lot or an upgrade handler sees it,
// and keeps it until it closes. node:http removes its own error listener when
// it hands a socket to an 'upgrade' handler; a WebSocket refusal written to
// such a socket, then a reset from the client, was an unhandled 'error' that
// ended the process. With the listener attached at accept, no later owner of
// the socket can leave it without one.
//
// One listener function for every socket (called with the socket as `this`),
// so a connection costs no closure.

/**
 * The codes counted by name; node:http's parse errors (HPE_INVALID_METHOD, …),
 * with which it closes a connection after its 400 answer, count as `HPE`, and
 * anything else as `other`, so the label set stays bounded.
 */
export const SOCKET_ERROR_CODES = ['ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ECONNABORTED', 'EHOSTUNREACH', 'ENETUNREACH', 'ERR_HTTP_REQUEST_TIMEOUT', 'HPE'] as const;

export type SocketErrorCode = (typeof SOCKET_ERROR_CODES)[number] | 'other';

function label(code: string | undefined): SocketErrorCode {
  if (code === undefined) return 'other';
  if (code.startsWith('HPE_')) return 'HPE';
  return (SOCKET_ERROR_CODES as readonly string[]).includes(code) ? (code as SocketErrorCode) : 'other';
}

export class ClientSocketErrors {
  /** Errors so far, by code. */
  readonly counts: Record<SocketErrorCode, number>;
  private readonly listener: (this: Duplex, error: NodeJS.ErrnoException) => void;

  constructor(log?: Logger) {
    const counts = Object.fromEntries([...SOCKET_ERROR_CODES, 'other'].map((code) => [code, 0])) as Record<SocketErrorCode, number>;
    this.counts = counts;
    this.listener = function (error) {
      counts[label(error.code)]++;
      // remoteAddress is cached from accept (admission reads it), so it is still known after a reset.
      const peer = this as Duplex & { remoteAddress?: string; remotePort?: number };
      log?.debug(`client ${peer.remoteAddress}:${peer.remotePort}: ${error.message}`);
    };
  }

  get total(): number {
    let sum = 0;
    for (const count of Object.values(this.counts)) sum += count;
    return sum;
  }

  /** Counts and logs every error of `socket` from now until it closes. */
  watch(socket: Duplex): void {
    socket.on('error', this.listener);
  }
}
