import { attackerSocket, closedWithin, count, letGo, runWorkers, sleep, type Target } from './common.js';
import type { Random } from './random.js';

// The daemon's Modbus TCP server (apis.modbus_server): random requests (good
// ones of every function code, unknown codes, odd units and quantities,
// writes to the simulated board), broken MBAP headers (protocol id, lengths
// that lie, truncated frames), garbage, one-byte trickles, pipelined bursts
// from clients that never read, and a reset at random moments. The server's
// replies must echo the request's transaction id; any other is counted as
// `modbus-server.bad_replies`, which fails the run.

const FUNCTION_CODES = [1, 2, 3, 4, 5, 6, 15, 16, 23, 7, 8, 17, 43, 0, 0x81, 255];
/** The simulated board (1), the hostile peer's board (2), the virtual unit, nobody. */
const UNITS = [1, 1, 1, 2, 250, 99, 0, 255];

function pduFor(rng: Random): Buffer {
  const fc = rng.pick(FUNCTION_CODES);
  const address = rng.weighted<number>([[6, rng.int(0, 24)], [2, rng.int(1000, 1030)], [1, rng.int(0, 0xffff)]]);
  const quantity = rng.weighted<number>([[8, rng.int(1, 16)], [1, rng.int(0, 2100)]]);
  const head = Buffer.alloc(5);
  head[0] = fc;
  head.writeUInt16BE(address, 1);
  switch (fc) {
    case 5:
      head.writeUInt16BE(rng.weighted<number>([[3, 0], [3, 0xff00], [1, rng.int(0, 0xffff)]]), 3);
      // Only the simulated board's LEDs (coils 8..11): the supervising client's outputs are left alone.
      head.writeUInt16BE(rng.chance(0.9) ? rng.int(8, 11) : address, 1);
      return head;
    case 6:
      head.writeUInt16BE(rng.int(0, 0xffff), 3);
      head.writeUInt16BE(rng.chance(0.9) ? rng.int(1010, 1013) : address, 1);
      return head;
    case 15:
    case 16: {
      const n = Math.min(quantity, 40);
      head.writeUInt16BE(quantity, 3);
      const bytes = fc === 15 ? (n + 7) >> 3 : 2 * n;
      const count = rng.chance(0.9) ? bytes : rng.int(0, 255);
      return Buffer.concat([head, Buffer.from([count & 0xff]), rng.bytes(rng.chance(0.9) ? bytes : rng.int(0, 30))]);
    }
    case 23: {
      const n = rng.int(1, 5);
      const extra = Buffer.alloc(4);
      extra.writeUInt16BE(rng.int(1010, 1013), 0);
      extra.writeUInt16BE(n, 2);
      head.writeUInt16BE(quantity, 3);
      return Buffer.concat([head, extra, Buffer.from([2 * n]), rng.bytes(2 * n)]);
    }
    default:
      head.writeUInt16BE(quantity, 3);
      return rng.chance(0.9) ? head : head.subarray(0, rng.int(1, 5));
  }
}

function frame(rng: Random, transactionId: number): Buffer {
  const pdu = pduFor(rng);
  const header = Buffer.alloc(7);
  header.writeUInt16BE(transactionId, 0);
  header.writeUInt16BE(rng.chance(0.97) ? 0 : rng.int(1, 0xffff), 2);
  const length = rng.weighted<number>([[30, pdu.length + 1], [1, rng.int(0, 2)], [1, rng.int(255, 0xffff)], [1, pdu.length + 1 + rng.int(1, 20)]]);
  header.writeUInt16BE(length, 4);
  header[6] = rng.pick(UNITS);
  return Buffer.concat([header, pdu]);
}

export async function modbusServerAttack(target: Target, port: number, rng: Random, workers: number): Promise<void> {
  const { counts } = target;
  await runWorkers(target, rng, 'modbus-server', workers, async (rng) => {
    const socket = await attackerSocket({ ...target, port }, rng, 'modbus-server');
    if (!socket) return;
    const sent = new Set<number>();
    const reading = rng.chance(0.85);
    if (reading) {
      let buffered = Buffer.alloc(0);
      socket.on('data', (chunk: Buffer) => {
        buffered = Buffer.concat([buffered, chunk]);
        while (buffered.length >= 7 && buffered.length >= 6 + buffered.readUInt16BE(4)) {
          const id = buffered.readUInt16BE(0);
          count(counts, sent.has(id) ? 'modbus-server.replies' : 'modbus-server.bad_replies');
          if ((buffered[7]! & 0x80) !== 0) count(counts, `modbus-server.exception_${buffered[8]}`);
          buffered = buffered.subarray(6 + buffered.readUInt16BE(4));
        }
      });
    } else {
      socket.pause();
      count(counts, 'modbus-server.paused_readers');
    }
    const how = rng.weighted<string>([[6, 'requests'], [1, 'garbage'], [1, 'drip'], [1, 'burst'], [1, 'hold']]);
    count(counts, `modbus-server.${how}`);
    const firstId = rng.int(1, 60_000);
    const frames = Array.from({ length: how === 'burst' ? rng.int(20, 400) : rng.int(1, 8) }, (_, i) => {
      sent.add(firstId + i);
      return frame(rng, firstId + i);
    });
    if (how === 'garbage') socket.write(rng.bytes(rng.int(1, 4000)));
    else if (how === 'drip') {
      const bytes = Buffer.concat(frames);
      for (let at = 0; at < bytes.length && !socket.destroyed && !target.stopped(); at++) {
        socket.write(bytes.subarray(at, at + 1));
        await sleep(rng.int(0, 40));
        if (rng.chance(0.02)) break;
      }
    } else if (how === 'requests') {
      for (const one of frames) {
        if (socket.destroyed) break;
        socket.write(one);
        await sleep(rng.int(0, 20));
      }
    } else if (how === 'burst') socket.write(Buffer.concat(frames));
    else if (how === 'hold') socket.write(frames[0]!.subarray(0, rng.int(1, frames[0]!.length - 1)));
    count(counts, 'modbus-server.requests', frames.length);
    await closedWithin(socket, rng.weighted([[3, 0], [4, rng.int(1, 300)], [2, rng.int(300, 6000)]]));
    count(counts, `modbus-server.let_go.${letGo(socket, rng)}`);
  });
}
