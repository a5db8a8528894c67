import type { Duplex } from 'node:stream';

// The last reply on a connection that HTTP has handed over (a refused
// WebSocket upgrade), and the close after it.
//
// `end(reply)` alone sends the reply and a FIN, but nothing reads the
// connection any more: what the client sends next fills the stream's buffer,
// reading stops, and the client's own FIN is never seen. The connection then
// stayed open, in FIN-WAIT-2 with up to ~190 KB of unread input held, for as
// long as the client kept its end open: for ever, for a hostile one (a fuzz
// run collected 60 of them in 10 minutes). Here what arrives is read and
// dropped, so the client's FIN ends the connection as usual, and one that
// keeps it open anyway is cut off after a deadline.

/** How long a client gets to close after its last reply, which it has long read by then. */
export const CLOSE_DEADLINE_MS = 5000;

const discard = (): void => undefined;

export function endWithReply(socket: Duplex, reply: string): void {
  const cutOff = setTimeout(() => socket.destroy(), CLOSE_DEADLINE_MS);
  // A pending cut-off must not hold up the process's exit.
  cutOff.unref();
  socket.once('close', () => clearTimeout(cutOff));
  socket.on('data', discard);
  socket.end(reply);
}
