import { once } from 'node:events';
import { connect as tcpConnect, createServer, type AddressInfo } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { ATTACKER_ADDRESSES, attackerSocket, closedWithin, count, letGo, runWorkers, sleep, type Target } from './common.js';
import type { Random } from './random.js';

// TLS handshakes at a daemon with `apis.tls`: garbage after a handshake
// record's first byte, real ClientHellos cut off anywhere or dripped a byte at
// a time, plain HTTP, full handshakes followed by junk, and TLS 1.2
// renegotiation attempts (which must be refused). Each episode bounds itself
// in time and closes what it opened.

let clientHello: Promise<Buffer> | undefined;

/** A real ClientHello, as Node's TLS client sends it, caught by a throwaway listener. */
function realClientHello(): Promise<Buffer> {
  clientHello ??= (async () => {
    const server = createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const caught = once(server, 'connection').then(async ([socket]) => {
      const [chunk] = (await once(socket as import('node:net').Socket, 'data')) as [Buffer];
      (socket as import('node:net').Socket).destroy();
      return chunk;
    });
    const client = tlsConnect({ host: '127.0.0.1', port: (server.address() as AddressInfo).port, rejectUnauthorized: false, servername: 'localhost' });
    client.on('error', () => undefined);
    const chunk = await caught;
    client.destroy();
    server.close();
    return chunk;
  })();
  return clientHello;
}

export async function tlsAttack(target: Target, rng: Random, workers: number): Promise<void> {
  const hello = await realClientHello();
  await runWorkers(target, rng, 'tls', workers, async (own) => {
    const kind = own.weighted<string>([
      [3, 'garbage'],
      [3, 'truncated'],
      [1, 'drip'],
      [2, 'renegotiate'],
      [1, 'junk-after-handshake'],
      [1, 'plain'],
    ]);
    count(target.counts, `tls.${kind}`);
    if (kind === 'renegotiate' || kind === 'junk-after-handshake') {
      const tcp = tcpConnect({ host: '127.0.0.1', port: target.port, localAddress: own.pick(ATTACKER_ADDRESSES) });
      tcp.on('error', () => undefined);
      const socket = tlsConnect({ socket: tcp, maxVersion: 'TLSv1.2', rejectUnauthorized: false, servername: 'localhost' });
      socket.on('error', () => undefined);
      const connected = await Promise.race([once(socket, 'secureConnect').then(() => true), sleep(3000).then(() => false)]);
      if (!connected) {
        count(target.counts, 'tls.handshake_failures');
        socket.destroy();
        tcp.destroy();
        return;
      }
      if (kind === 'renegotiate') {
        const outcome = await new Promise<string>((resolve) => {
          if (!socket.renegotiate({ rejectUnauthorized: false }, (error) => resolve(error ? 'refused' : 'renegotiated'))) resolve('refused');
          socket.once('close', () => resolve('refused'));
          setTimeout(() => resolve('refused'), 1500).unref();
        });
        count(target.counts, `tls.renegotiation_${outcome}`);
      } else {
        socket.write(own.bytes(own.length(4096)));
        await closedWithin(socket as unknown as import('node:net').Socket, 500);
      }
      socket.destroy();
      tcp.destroy();
      return;
    }
    const socket = await attackerSocket(target, own, 'tls');
    if (!socket) return;
    socket.resume();
    if (kind === 'garbage') socket.write(Buffer.concat([Buffer.from([0x16]), own.bytes(own.length(2048))]));
    else if (kind === 'truncated') socket.write(hello.subarray(0, own.int(1, hello.length - 1)));
    else if (kind === 'plain') socket.write(`GET /rest/all HTTP/1.1\r\nHost: 127.0.0.1:${target.port}\r\n\r\n`);
    else {
      // A byte at a time: cut off by the handshake deadline, or let go first.
      for (let index = 0; index < hello.length && !socket.destroyed && !target.stopped() && index < 30; index++) {
        socket.write(hello.subarray(index, index + 1));
        await sleep(own.int(50, 300));
      }
    }
    if (await closedWithin(socket, own.int(100, 1500))) count(target.counts, 'tls.closed_by_daemon');
    else letGo(socket, own);
  });
}
