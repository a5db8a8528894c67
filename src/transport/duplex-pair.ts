import { Duplex } from 'node:stream';

// Two connected in-memory byte streams: what one end writes, the other reads.
// Ending or destroying one end ends the other, as closing a socket would.
// (Node 22 has stream.duplexPair; the bundle still runs on Node 18.)

export function duplexPair(): [Duplex, Duplex] {
  const ends: Duplex[] = [];
  const make = (peer: () => Duplex): Duplex =>
    new Duplex({
      read() {},
      write(chunk: Buffer, _encoding, callback) {
        const copy = Buffer.from(chunk);
        // Delivered after the writer's own code has run, as on a socket.
        queueMicrotask(() => peer().push(copy));
        callback();
      },
      final(callback) {
        queueMicrotask(() => peer().push(null));
        callback();
      },
      destroy(error, callback) {
        const other = peer();
        if (!other.destroyed) queueMicrotask(() => other.destroy());
        callback(error);
      },
    });
  ends.push(make(() => ends[1]!), make(() => ends[0]!));
  return [ends[0]!, ends[1]!];
}
