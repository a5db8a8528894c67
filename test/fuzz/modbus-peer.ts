import { findModel } from '../../src/boards/resolve.js';
import { serveRequest } from '../../src/modbus/slave.js';
import { MbapFramer, encodeMbap } from '../../src/modbus/tcp-framer.js';
import { SimulatedBoard } from '../../src/sim/simulated-board.js';
import { count, tcpPeer, type Counters, type Peer } from './common.js';
import type { Random } from './random.js';

// A Modbus TCP slave that the daemon polls (bus TCP in config.ts), built from
// the same register map as the simulator, answering right half the time and
// otherwise with what a broken gateway or a hostile peer sends: late and
// duplicate replies, wrong transaction, unit or function, exceptions, lying
// lengths and byte counts, truncated or dripped frames, garbage, silence,
// a FIN or a reset.

export const MODBUS_MODEL = '00';
/** The bus timeout configured for it (config.ts); "late" replies come after it. */
export const MODBUS_TIMEOUT_MS = 150;

type Reply =
  | 'correct' | 'slow' | 'late' | 'wrong transaction' | 'wrong unit' | 'wrong function' | 'exception' | 'truncated' | 'garbage'
  | 'long length' | 'short length' | 'extra bytes' | 'duplicate' | 'dripped' | 'silent' | 'close' | 'reset' | 'byte count lie' | 'protocol id';

const REPLIES: ReadonlyArray<readonly [number, Reply]> = [
  [50, 'correct'], [4, 'slow'], [5, 'late'], [4, 'wrong transaction'], [4, 'wrong unit'], [3, 'wrong function'], [3, 'exception'],
  [3, 'truncated'], [3, 'garbage'], [2, 'long length'], [1, 'short length'], [2, 'extra bytes'], [2, 'duplicate'], [3, 'dripped'],
  [3, 'silent'], [1, 'close'], [1, 'reset'], [2, 'byte count lie'], [1, 'protocol id'],
];

export function hostileModbusPeer(rng: Random, counts: Counters): Peer {
  const model = findModel(MODBUS_MODEL, new Map());
  if (!model) throw new Error(`no built-in model ${MODBUS_MODEL}`);
  const board = new SimulatedBoard(model);
  return tcpPeer((socket) => {
    count(counts, 'modbus.connections');
    const later = (ms: number, send: () => void) => setTimeout(() => !socket.destroyed && send(), ms).unref();
    const framer = new MbapFramer(
      (transactionId, unit, pdu) => {
        const right = encodeMbap(transactionId, unit, serveRequest(board, pdu));
        const kind = rng.weighted(REPLIES);
        count(counts, 'modbus.replies');
        count(counts, `modbus.reply.${kind}`);
        switch (kind) {
          case 'correct': return void socket.write(right);
          case 'slow': return later(rng.int(5, MODBUS_TIMEOUT_MS / 2), () => socket.write(right));
          case 'late': return later(rng.int(MODBUS_TIMEOUT_MS + 1, MODBUS_TIMEOUT_MS * 4), () => socket.write(right));
          case 'wrong transaction': return void socket.write(encodeMbap((transactionId + rng.int(1, 0xfffe)) & 0xffff, unit, serveRequest(board, pdu)));
          case 'wrong unit': return void socket.write(encodeMbap(transactionId, (unit + rng.int(1, 254)) & 0xff, serveRequest(board, pdu)));
          case 'wrong function': {
            const reply = Buffer.from(right);
            reply[7] = rng.pick([0, 1, 2, 3, 4, 5, 6, 15, 16, 0x2b, 0x7f]) === reply[7] ? 0x41 : rng.int(0, 0xff);
            return void socket.write(reply);
          }
          case 'exception': return void socket.write(encodeMbap(transactionId, unit, Buffer.from([(pdu[0]! | 0x80) & 0xff, rng.int(0, 255)])));
          case 'truncated': return void socket.write(right.subarray(0, rng.int(1, right.length - 1)));
          case 'garbage': return void socket.write(rng.bytes(rng.int(1, 300)));
          case 'long length': {
            const reply = Buffer.from(right);
            reply.writeUInt16BE(rng.pick([0xffff, 300, reply.readUInt16BE(4) + rng.int(1, 20)]), 4);
            return void socket.write(reply);
          }
          case 'short length': {
            const reply = Buffer.from(right);
            reply.writeUInt16BE(rng.int(0, 1), 4);
            return void socket.write(reply);
          }
          case 'extra bytes': return void socket.write(Buffer.concat([right, rng.bytes(rng.int(1, 50))]));
          case 'duplicate': return void socket.write(Buffer.concat([right, right]));
          case 'dripped': {
            for (let i = 0; i < right.length; i++) later(i * rng.int(0, 10), () => socket.write(right.subarray(i, i + 1)));
            return;
          }
          case 'silent': return;
          case 'close': return void socket.end();
          case 'reset': return void socket.resetAndDestroy();
          case 'byte count lie': {
            const reply = Buffer.from(right);
            if (reply.length > 8) reply[8] = rng.int(0, 255);
            return void socket.write(reply);
          }
          case 'protocol id': {
            const reply = Buffer.from(right);
            reply.writeUInt16BE(rng.int(1, 0xffff), 2);
            return void socket.write(reply);
          }
        }
      },
      // What the daemon sent is not MBAP: it would be iogate's bug, and is counted.
      () => {
        count(counts, 'modbus.bad_requests');
        socket.destroy();
      },
    );
    socket.on('data', (chunk: Buffer) => framer.push(chunk));
  });
}
