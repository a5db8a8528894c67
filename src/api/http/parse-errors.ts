import type { Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { errorBody } from './respond.js';

// A request node:http cannot parse (a bad method or header, headers over the
// size limit, a request that took too long) never reaches a route. Node's own
// answer to it is a bare status line with no body; EVOK's clients expect the
// `{"success": false, "errors": {...}}` envelope on every error, so iogate
// answers these too, with the same status node:http would choose. The socket
// is then destroyed with the error, as node:http does, so the client-error
// listener every socket carries (socket-errors.ts) still logs and counts it.

const ANSWERS: Record<string, { status: number; reason: string; kind: string; message: string }> = {
  HPE_HEADER_OVERFLOW: { status: 431, reason: 'Request Header Fields Too Large', kind: 'HeaderTooLarge', message: 'the request headers are larger than the server accepts' },
  HPE_CHUNK_EXTENSIONS_OVERFLOW: { status: 413, reason: 'Payload Too Large', kind: 'PayloadTooLarge', message: 'the chunk extensions are larger than the server accepts' },
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, reason: 'Request Timeout', kind: 'Timeout', message: 'the request did not arrive in time' },
};
const BAD_REQUEST = { status: 400, reason: 'Bad Request', kind: 'BadRequest', message: 'the request is not valid HTTP' };

/** Built once per kind: a parse error costs no formatting. */
const RESPONSES = new Map<string, string>();
function responseFor(code: string | undefined): string {
  const answer = (code !== undefined ? ANSWERS[code] : undefined) ?? BAD_REQUEST;
  let text = RESPONSES.get(answer.kind);
  if (text === undefined) {
    const body = errorBody(answer.kind, answer.message);
    text = `HTTP/1.1 ${answer.status} ${answer.reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
    RESPONSES.set(answer.kind, text);
  }
  return text;
}

export function answerParseErrors(server: Server): void {
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    // Only when nothing was answered on this connection yet, as node:http does: a
    // reset or a broken pipe has no one to answer, and a half-sent reply must not get a second head.
    const sent = (socket as Duplex & { bytesWritten?: number }).bytesWritten ?? 0;
    if (socket.writable && sent === 0 && error.code !== 'ECONNRESET' && error.code !== 'EPIPE') socket.write(responseFor(error.code));
    socket.destroy(error);
  });
}
