import { RtuFramer, encodeRtu } from './rtu-framer.js';
import { MbapFramer, TransactionIds, encodeMbap } from './tcp-framer.js';

// The master speaks the same PDUs over two framings. RTU matches a reply to
// its request by unit id (one transaction on the wire at a time); TCP by the
// MBAP transaction id. Both are hidden behind this interface so the bus has a
// single transaction engine.

export interface FrameReply {
  /** Transaction id on TCP; on RTU the unit id (there is nothing else to match). */
  key: number;
  unit: number;
  pdu: Buffer;
}

export interface MasterFraming {
  encode(unit: number, pdu: Buffer): { frame: Buffer; key: number };
  push(chunk: Buffer): void;
  /** Forget a partial frame (after a timeout: the rest of it is never coming). */
  reset(): void;
  /** Corrupted frames seen so far (CRC errors and protocol errors). */
  corruptFrames(): number;
}

export function rtuFraming(onReply: (reply: FrameReply) => void): MasterFraming {
  const framer = new RtuFramer('response', (unit, pdu) => onReply({ key: unit, unit, pdu }));
  return {
    encode: (unit, pdu) => ({ frame: encodeRtu(unit, pdu), key: unit }),
    push: (chunk) => framer.push(chunk),
    reset: () => framer.reset(),
    corruptFrames: () => framer.stats.crcErrors,
  };
}

export function tcpFraming(onReply: (reply: FrameReply) => void): MasterFraming {
  let protocolErrors = 0;
  const ids = new TransactionIds();
  const framer = new MbapFramer(
    (transactionId, unit, pdu) => onReply({ key: transactionId, unit, pdu }),
    () => {
      protocolErrors++;
    },
  );
  return {
    encode: (unit, pdu) => {
      const key = ids.next();
      return { frame: encodeMbap(key, unit, pdu), key };
    },
    push: (chunk) => framer.push(chunk),
    reset: () => framer.reset(),
    corruptFrames: () => protocolErrors,
  };
}
