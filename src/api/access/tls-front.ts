import { X509Certificate, constants } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import type { Socket } from 'node:net';
import { TLSSocket, createSecureContext, type SecureContext } from 'node:tls';
import type { Logger } from '../../logging/log.js';

// HTTPS and WSS on iogate's own port. The listener accepts plain TCP as ever;
// this looks at a connection's first byte: 0x16 opens a TLS handshake, and the
// socket is wrapped in a TLSSocket and handed to the HTTP server, which then
// sees the same routes, WebSocket and panel as without TLS. Anything else is
// plain HTTP on a TLS port: it gets one 400 saying so and is closed (no
// redirect: a redirect would invite clients to send a token in the clear
// first). A renewed certificate is applied by a reload without dropping a
// connection (new handshakes take the new context).

export interface TlsFiles {
  cert: string;
  key: string;
}

/** A client that connects and sends nothing is closed after this long, before it ever reaches the HTTP server. */
const FIRST_BYTE_MS = 10_000;
/** From connecting to a finished handshake: a client that trickles its handshake is closed after this long. */
const HANDSHAKE_MS = 10_000;
/**
 * TLS 1.2 suites: forward-secret key exchange (ECDHE) and AEAD ciphers only, so
 * no CBC, SHA-1 MACs, RC4, 3DES, NULL or EXPORT. TLS 1.3's own suites are all
 * AEAD and stay Node's defaults.
 */
const TLS12_CIPHERS = [
  'ECDHE-ECDSA-AES128-GCM-SHA256',
  'ECDHE-RSA-AES128-GCM-SHA256',
  'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305',
  'ECDHE-RSA-CHACHA20-POLY1305',
].join(':');

/** Bounds on connections that have not finished their handshake; read live, so a reload's new limits apply. */
export interface PendingLimits {
  maxConnections: number;
  maxConnectionsPerAddress: number;
}
const TLS_HANDSHAKE = 0x16;
const PLAIN_REFUSAL = (() => {
  const body = '{"success":false,"errors":{"TlsRequired":"this port speaks HTTPS: use https:// (or wss://)"}}';
  return `HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`;
})();

export interface TlsFront {
  /** SHA-256 fingerprint of the certificate served, as `openssl x509 -fingerprint -sha256` shows it. */
  readonly fingerprint: string;
  /** Peeks at the connection; a TLS one is handed on wrapped, a plain one refused. */
  accept(socket: Socket, handOn: (socket: Socket) => void): void;
  /** Loads the files again (reload); connections already open keep their session. */
  renew(files: TlsFiles): void;
}

/** Throws with a readable message when a file cannot be read or does not hold a key and certificate that fit. */
export function createTlsFront(files: TlsFiles, log: Logger, limits: PendingLimits): TlsFront {
  let { context, fingerprint } = load(files);
  // Connections between accept and a finished handshake. HTTP's admission
  // sees a connection only once it is handed on, so until then these caps
  // (the same numbers as admission's) keep a crowd of silent or trickling
  // handshakes from holding descriptors and TLS state without bound.
  let pendingTotal = 0;
  const pendingByAddress = new Map<string, number>();
  return {
    get fingerprint() {
      return fingerprint;
    },
    accept(socket, handOn) {
      const address = socket.remoteAddress ?? '';
      const own = pendingByAddress.get(address) ?? 0;
      if (pendingTotal >= limits.maxConnections || own >= limits.maxConnectionsPerAddress) {
        log.debug(`HTTPS: ${address}: too many connections still in their handshake, closed`);
        socket.destroy();
        return;
      }
      pendingTotal++;
      pendingByAddress.set(address, own + 1);
      let pending = true;
      const done = () => {
        if (!pending) return;
        pending = false;
        clearTimeout(deadline);
        pendingTotal--;
        const left = (pendingByAddress.get(address) ?? 1) - 1;
        if (left === 0) pendingByAddress.delete(address);
        else pendingByAddress.set(address, left);
      };
      const deadline = setTimeout(() => socket.destroy(), HANDSHAKE_MS);
      const idle = setTimeout(() => socket.destroy(), FIRST_BYTE_MS);
      socket.once('error', () => clearTimeout(idle));
      socket.once('close', () => {
        clearTimeout(idle);
        done();
      });
      socket.once('data', (chunk: Buffer) => {
        clearTimeout(idle);
        socket.pause();
        if (chunk[0] !== TLS_HANDSHAKE) {
          socket.end(PLAIN_REFUSAL);
          socket.destroySoon();
          return;
        }
        socket.unshift(chunk);
        const secure = new TLSSocket(socket, { isServer: true, secureContext: context });
        secure.once('secure', done);
        // A failed handshake (garbage, an old protocol, a client that rejects our certificate) ends only this connection.
        secure.on('error', (error) => {
          log.debug(`HTTPS: ${socket.remoteAddress ?? '?'}: ${error.message}`);
          socket.destroy();
        });
        handOn(secure as unknown as Socket);
      });
    },
    renew(next) {
      ({ context, fingerprint } = load(next));
    },
  };
}

function load(files: TlsFiles): { context: SecureContext; fingerprint: string } {
  const cert = readFileSync(files.cert);
  const key = readFileSync(files.key);
  const context = createSecureContext({
    cert,
    key,
    minVersion: 'TLSv1.2',
    ciphers: TLS12_CIPHERS,
    honorCipherOrder: true,
    // TLS 1.2 renegotiation is refused outright (TLS 1.3 has none): it served only attacks on a server like this one.
    secureOptions: constants.SSL_OP_NO_RENEGOTIATION,
  });
  return { context, fingerprint: new X509Certificate(cert).fingerprint256 };
}

/** Changes whenever a file is replaced or rewritten, so a reload with the same paths still renews a certificate. */
export function tlsFilesStamp(files: TlsFiles | undefined): unknown {
  if (files === undefined) return undefined;
  const stamp = (path: string) => {
    try {
      const found = statSync(path);
      return `${found.ino}:${found.mtimeMs}:${found.size}`;
    } catch {
      return 'missing';
    }
  };
  return [files, stamp(files.cert), stamp(files.key)];
}
