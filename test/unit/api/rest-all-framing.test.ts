import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect } from 'node:net';
import { startGate } from '../../helpers/in-process.js';

// `/rest/all` is written as several chunks (ready runs of device JSON around
// the fresh `modbus_slave` text) under one Content-Length. On a keep-alive
// connection the next reply must start exactly where the body ends.

test('/rest/all replies on one keep-alive connection are framed by their Content-Length', async (t) => {
  const gate = await startGate();
  t.after(() => gate.close());
  const { port } = new URL(gate.baseUrl);
  const socket = connect(Number(port), '127.0.0.1');
  t.after(() => socket.destroy());
  await once(socket, 'connect');
  const request = 'GET /rest/all HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n';
  // Pipelined: the second request is answered right behind the first reply on the same bytes.
  socket.write(request + request + 'GET /rest/do/1_01 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
  let raw = Buffer.alloc(0);
  const replies: Array<{ status: string; body: string }> = [];
  for await (const chunk of socket) {
    raw = Buffer.concat([raw, chunk as Buffer]);
    for (;;) {
      const end = raw.indexOf('\r\n\r\n');
      if (end < 0) break;
      const head = raw.subarray(0, end).toString('latin1');
      const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1]);
      assert.ok(Number.isInteger(length), head);
      if (raw.length < end + 4 + length) break;
      replies.push({ status: head.split('\r\n')[0]!, body: raw.subarray(end + 4, end + 4 + length).toString('utf8') });
      raw = raw.subarray(end + 4 + length);
    }
    if (replies.length === 3) break;
  }
  assert.deepEqual(replies.map((reply) => reply.status), ['HTTP/1.1 200 OK', 'HTTP/1.1 200 OK', 'HTTP/1.1 200 OK']);
  for (const { body } of replies.slice(0, 2)) {
    const devices = JSON.parse(body) as Array<{ dev: string }>;
    // The volatile device sits between ready runs, so the body really is several chunks.
    assert.ok(devices.some((device) => device.dev === 'modbus_slave'));
    assert.ok(devices.findIndex((device) => device.dev === 'modbus_slave') < devices.length - 1);
  }
  assert.equal((JSON.parse(replies[2]!.body) as { circuit: string }).circuit, '1_01');
  assert.equal(raw.length, 0, 'nothing after the last reply');
});
