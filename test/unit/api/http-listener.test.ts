import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { test } from 'node:test';
import { createHttpListener } from '../../../src/api/http/server.js';

// The daemon's HTTP port is a plain TCP listener handing its sockets to the
// HTTP server. node:http's own servers accept with Nagle's algorithm off; a
// net server leaves it on unless told, and then a reply written while an
// earlier one is unacknowledged waits for the client's delayed ACK.

test('the HTTP listener accepts its sockets with Nagle off, as node:http does', async () => {
  const accepted: Socket[] = [];
  const listener = createHttpListener((socket) => accepted.push(socket));
  // The flag node reads for each accepted socket (net.Server's `noDelay` option) before handing it over.
  assert.equal((listener as unknown as { noDelay?: boolean }).noDelay, true);
  listener.listen(0, '127.0.0.1');
  await once(listener, 'listening');
  const client = connect({ port: (listener.address() as { port: number }).port, host: '127.0.0.1' });
  try {
    await once(listener, 'connection');
    assert.equal(accepted.length, 1, 'the socket reaches the handler');
  } finally {
    client.destroy();
    for (const socket of accepted) socket.destroy();
    listener.close();
  }
});
