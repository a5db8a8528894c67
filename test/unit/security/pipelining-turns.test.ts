import assert from 'node:assert/strict';
import { createHook } from 'node:async_hooks';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { test } from 'node:test';
import { REQUESTS_PER_TURN, takingTurns } from '../../../src/api/http/pipelining.js';

// A TCP connection's turn is one read: the requests one read brought are
// routed REQUESTS_PER_TURN at a time, and a plain request (one per read) is
// routed without scheduling anything. Seeing the end of an event-loop turn
// took a setImmediate on every GET (src/api/http/pipelining.ts, turnOf).

async function serve(onRequest: () => void): Promise<{ server: Server; port: number }> {
  const server = createServer(
    takingTurns((_req, res) => {
      onRequest();
      res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': 2 });
      res.end('ok');
    }),
  );
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, port: (server.address() as AddressInfo).port };
}

/** Sends `text` and resolves once `replies` status lines have come back. */
function exchange(socket: Socket, text: string, replies: number): Promise<void> {
  return new Promise((resolve) => {
    let seen = 0;
    const onData = (chunk: string): void => {
      seen += chunk.split('HTTP/1.1 200').length - 1;
      if (seen >= replies) {
        socket.off('data', onData);
        resolve();
      }
    };
    socket.on('data', onData);
    socket.write(text);
  });
}

const GET = 'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n';

test('GETs on a keep-alive TCP connection, one per read, schedule no Immediate', { timeout: 20_000 }, async () => {
  const { server, port } = await serve(() => undefined);
  const socket = connect(port, '127.0.0.1');
  socket.setEncoding('latin1');
  await once(socket, 'connect');
  let immediates = 0;
  const hook = createHook({
    init(_id, type) {
      if (type === 'Immediate') immediates++;
    },
  });
  try {
    await exchange(socket, GET, 1);
    hook.enable();
    for (let i = 0; i < 20; i++) await exchange(socket, GET, 1);
    hook.disable();
    assert.equal(immediates, 0, `${immediates} Immediates scheduled for 20 GETs`);
  } finally {
    hook.disable();
    socket.destroy();
    server.close();
  }
});

test(`requests pipelined in one read are routed ${REQUESTS_PER_TURN} at once, the rest on later turns, all answered`, { timeout: 20_000 }, async () => {
  const PIPELINED = REQUESTS_PER_TURN * 3 + 1;
  let routed = 0;
  /** Requests routed in the same synchronous run as the first (the read's own turn). */
  let firstTurn: number | undefined;
  const { server, port } = await serve(() => {
    if (routed++ === 0) queueMicrotask(() => (firstTurn = routed));
  });
  const socket = connect(port, '127.0.0.1');
  socket.setEncoding('latin1');
  await once(socket, 'connect');
  try {
    await exchange(socket, GET.repeat(PIPELINED), PIPELINED);
    assert.equal(routed, PIPELINED);
    assert.equal(firstTurn, REQUESTS_PER_TURN);
  } finally {
    socket.destroy();
    server.close();
  }
});
