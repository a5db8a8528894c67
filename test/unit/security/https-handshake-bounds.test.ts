import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import { startHttpsDaemon } from '../../helpers/https-daemon.js';
import { SIMULATED_BUS, configFile } from '../../helpers/http-call.js';

// Connections still before or in their TLS handshake are not yet HTTP's, so
// admission cannot see them: the TLS front applies the per-address cap to
// them itself. Silent sockets from one address beyond max_connections_per_address
// are closed at once, while a client from another address is served.

const PER_ADDRESS = 3;

interface Silent {
  socket: Socket;
  /** Resolves when the daemon has closed it; `isClosed` says whether it has by now. */
  closed: Promise<void>;
  isClosed(): boolean;
}

function silentSocket(port: number): Promise<Silent> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, localAddress: '127.0.0.2' });
    let isClosed = false;
    const closed = new Promise<void>((settle) => socket.once('close', () => settle()));
    socket.on('error', () => undefined);
    socket.once('connect', () => resolve({ socket, closed, isClosed: () => isClosed }));
    socket.once('close', () => {
      isClosed = true;
      reject(new Error('closed before connecting'));
    });
  });
}

/** Below the daemon's 10 s wait for a first byte, after which the silent ones within the cap are closed too. */
const PAST_CAP_CLOSED_WITHIN_MS = 8000;

test('silent connections beyond the per-address cap are closed before any handshake; others are served', async (t) => {
  const { dir, file } = configFile(['state_dir: state', 'apis:', '  tls: {self_signed: true}', `  limits: {max_connections_per_address: ${PER_ADDRESS}}`, SIMULATED_BUS].join('\n'), 'iogate-https-bounds-');
  const daemon = await startHttpsDaemon(file, dir);
  const { port } = daemon;
  const sockets: Silent[] = [];
  t.after(async () => {
    for (const { socket } of sockets) socket.destroy();
    await daemon.stop();
  });

  for (let index = 0; index < PER_ADDRESS * 2; index++) sockets.push(await silentSocket(port));
  // The ones past the cap are closed on arrival: awaited, not given a fixed window, so a loaded
  // runner that delays the close does not fail; one the daemon took in would stay open 10 s.
  let timer: NodeJS.Timeout | undefined;
  const pastClosed = await Promise.race([
    Promise.all(sockets.slice(PER_ADDRESS).map(({ closed }) => closed)).then(() => true),
    new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), PAST_CAP_CLOSED_WITHIN_MS))),
  ]);
  clearTimeout(timer);
  const states = sockets.map(({ isClosed }) => isClosed());
  assert.ok(pastClosed, `the ones past the cap closed at once (closed: ${states.join(',')})`);
  assert.deepEqual(states.slice(0, PER_ADDRESS), [false, false, false], 'the first ones wait for their first byte');

  const ca = readFileSync(join(dir, 'state', 'tls', 'self-signed-cert.pem'));
  const status = await new Promise<number>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/rest/do/1_01', ca, servername: 'localhost', agent: false }, (res) => res.resume().on('end', () => resolve(res.statusCode!)));
    req.on('error', reject);
    req.end();
  });
  assert.equal(status, 200);
});
