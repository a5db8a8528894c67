import { encodeRtu, RtuFramer } from '../modbus/rtu-framer.js';
import { serveRequest, type SlaveStore } from '../modbus/slave.js';

// The slave side of an RTU line: whole request frames in, replies out, for the
// boards whose unit ids are on this line. Broadcasts (unit 0) are served by
// every board and answered by none, as the serial line spec requires.

export function rtuResponder(
  boards: ReadonlyMap<number, SlaveStore>,
  send: (frame: Buffer) => void,
): (chunk: Buffer) => void {
  const framer = new RtuFramer('request', (unit, pdu) => {
    if (unit === 0) {
      for (const board of boards.values()) if (board.powered !== false) serveRequest(board, pdu);
      return;
    }
    const board = boards.get(unit);
    if (board && board.powered !== false) send(encodeRtu(unit, serveRequest(board, pdu)));
  });
  return (chunk) => framer.push(chunk);
}
