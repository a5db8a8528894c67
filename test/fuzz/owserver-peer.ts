import { KEEP_ALIVE, MESSAGE, MessageReader, encodeMessage, encodeReply } from '../../src/owserver/protocol.js';
import { SimulatedOneWire } from '../../src/sim/onewire.js';
import { count, tcpPeer, type Counters, type Peer } from './common.js';
import type { Random } from './random.js';

// An owserver that the daemon's 1-Wire bus talks to (bus OW in config.ts):
// the simulated devices answer right half the time; otherwise keep-alives
// (a few, or without end), silence, late answers, error returns, lengths
// that lie (huge, negative, over the bound), truncated headers, garbage,
// values that are not numbers or not UTF-8, a directory of thousands of
// entries or of junk names, a FIN or a reset.

/** The bus timeout configured for it (config.ts). */
export const OWSERVER_TIMEOUT_MS = 300;

type Reply =
  | 'correct' | 'keep-alives' | 'keep-alives forever' | 'silent' | 'late' | 'error return' | 'huge length' | 'over the bound'
  | 'truncated header' | 'garbage' | 'close' | 'reset' | 'not a number' | 'not utf-8' | 'many entries' | 'junk entries' | 'bad version';

const REPLIES: ReadonlyArray<readonly [number, Reply]> = [
  [50, 'correct'], [5, 'keep-alives'], [2, 'keep-alives forever'], [3, 'silent'], [3, 'late'], [4, 'error return'], [3, 'huge length'],
  [2, 'over the bound'], [3, 'truncated header'], [3, 'garbage'], [2, 'close'], [2, 'reset'], [4, 'not a number'], [2, 'not utf-8'],
  [2, 'many entries'], [3, 'junk entries'], [2, 'bad version'],
];

function correct(tree: SimulatedOneWire, type: number, path: string): Buffer {
  if (type === MESSAGE.READ) {
    const text = tree.read(path);
    return text === undefined ? encodeReply(-1, Buffer.alloc(0)) : encodeReply(Buffer.byteLength(text), Buffer.from(text));
  }
  const entries = tree.list(path);
  if (entries === undefined) return encodeReply(-1, Buffer.alloc(0));
  if (type === MESSAGE.DIRALL) return encodeReply(0, Buffer.from(`${entries.join(',')}\0`));
  return Buffer.concat([...entries.map((entry) => encodeReply(0, Buffer.from(`${entry}\0`))), encodeReply(0, Buffer.alloc(0))]);
}

function header(fields: { version?: number; length: number; ret: number }): Buffer {
  const buffer = Buffer.alloc(24);
  buffer.writeInt32BE(fields.version ?? 0, 0);
  buffer.writeInt32BE(fields.length, 4);
  buffer.writeInt32BE(fields.ret, 8);
  return buffer;
}

export function hostileOwserver(rng: Random, counts: Counters): Peer {
  const tree = new SimulatedOneWire(['28', '26', '28', '10']);
  return tcpPeer((socket) => {
    count(counts, 'owserver.connections');
    const reader = new MessageReader();
    const timers = new Set<NodeJS.Timeout>();
    socket.on('close', () => timers.forEach(clearTimeout));
    const later = (ms: number, send: () => void) => {
      const timer = setTimeout(() => {
        timers.delete(timer);
        if (!socket.destroyed) send();
      }, ms);
      timers.add(timer);
    };
    let answered = false;
    socket.on('data', (chunk: Buffer) => {
      if (answered) return;
      let request;
      try {
        request = reader.push(chunk)[0];
      } catch {
        count(counts, 'owserver.bad_requests');
        socket.destroy();
        return;
      }
      if (!request) return;
      answered = true;
      const path = request.payload.toString('utf8').replace(/\0.*$/s, '') || '/';
      const right = correct(tree, request.typeOrRet, path);
      const kind = rng.weighted(REPLIES);
      count(counts, 'owserver.replies');
      count(counts, `owserver.reply.${kind}`);
      const keepAlive = encodeMessage({ version: 0, payloadLength: KEEP_ALIVE, typeOrRet: 0, flags: 0, size: 0, offset: 0, payload: Buffer.alloc(0) });
      switch (kind) {
        case 'correct': return void socket.end(right);
        case 'keep-alives': {
          const n = rng.int(1, 20);
          for (let i = 0; i < n; i++) later(i * 10, () => socket.write(keepAlive));
          return later(n * 10, () => socket.end(right));
        }
        case 'keep-alives forever': {
          const tick = () => later(rng.int(5, 50), () => {
            socket.write(keepAlive);
            tick();
          });
          return tick();
        }
        case 'silent': return;
        case 'late': return later(rng.int(OWSERVER_TIMEOUT_MS + 1, OWSERVER_TIMEOUT_MS * 3), () => socket.end(right));
        case 'error return': return void socket.end(encodeReply(-rng.int(1, 200), Buffer.alloc(0)));
        case 'huge length': return void socket.end(Buffer.concat([header({ length: rng.pick([0x7fff_ffff, 0x10_0000, 70_000]), ret: 0 }), rng.bytes(rng.int(0, 100))]));
        case 'over the bound': return void socket.end(encodeReply(0, Buffer.alloc(rng.int(65_537, 200_000), 0x31)));
        case 'truncated header': return void socket.end(right.subarray(0, rng.int(1, 23)));
        case 'garbage': return void socket.end(rng.bytes(rng.int(1, 500)));
        case 'close': return void socket.end();
        case 'reset': return void socket.resetAndDestroy();
        case 'not a number': {
          const text = Buffer.from(rng.pick(['abc', '', 'NaN', '1e999', '  -0', '- 1', '85.0000\0junk', ' '.repeat(12), '0x10']));
          return void socket.end(encodeReply(text.length, text));
        }
        case 'not utf-8': {
          const bytes = rng.bytes(rng.int(1, 64));
          return void socket.end(encodeReply(bytes.length, bytes));
        }
        case 'many entries': {
          const entries = Array.from({ length: rng.int(4000, 6000) }, (_, i) => `/28.${i.toString(16).padStart(12, '0').toUpperCase()}.00`);
          return void socket.end(request.typeOrRet === MESSAGE.DIR ? Buffer.concat([...entries.map((entry) => encodeReply(0, Buffer.from(`${entry}\0`))), encodeReply(0, Buffer.alloc(0))]) : encodeReply(0, Buffer.from(`${entries.join(',')}\0`)));
        }
        case 'junk entries': {
          const junk = Array.from({ length: rng.int(1, 30) }, () => rng.pick(['/zz.123', '/28.', '/' + 'a'.repeat(rng.int(1, 3000)), '/28.95DCD5090000.35/../x', '', ',', '/uncached/28.1', '/28.GGGGGGGGGGGG.00']));
          return void socket.end(encodeReply(0, Buffer.from(`${junk.join(',')}\0`)));
        }
        case 'bad version': return void socket.end(Buffer.concat([header({ version: rng.int(1, 5), length: 0, ret: 0 })]));
      }
    });
  });
}
