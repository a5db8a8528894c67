import { createServer, type Server } from 'node:net';
import { EXCEPTION } from '../modbus/pdu.js';
import { serveRequest, type SlaveStore } from '../modbus/slave.js';
import { MbapFramer, encodeMbap } from '../modbus/tcp-framer.js';

// The slave side of Modbus TCP: any number of client connections, each with
// its own MBAP stream, routed to the board with the request's unit id. A unit
// nobody serves gets "gateway target failed to respond", which is what a
// TCP-to-RTU gateway answers for a silent slave, rather than silence that
// would cost the client a full timeout.

export function modbusTcpServer(boards: ReadonlyMap<number, SlaveStore & { silent?: boolean }>): Server {
  return createServer((socket) => {
    socket.setNoDelay(true);
    const framer = new MbapFramer(
      (transactionId, unit, pdu) => {
        const board = boards.get(unit);
        // A board switched off is silent, as a dead slave behind a gateway that does not answer for it.
        if (board?.powered === false) return;
        const reply = board ? serveRequest(board, pdu) : Buffer.from([(pdu[0]! & 0x7f) | 0x80, EXCEPTION.GATEWAY_TARGET_FAILED]);
        socket.write(encodeMbap(transactionId, unit, reply));
      },
      // A stream that is not MBAP cannot be resynchronised; drop the client.
      () => socket.destroy(),
    );
    socket.on('data', (chunk) => framer.push(chunk));
    socket.on('error', () => {
      // The client went away; 'close' cleans up.
    });
  });
}
