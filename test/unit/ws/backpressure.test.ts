import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { Socket } from 'node:net';
import { test } from 'node:test';
import { setImmediate as turn } from 'node:timers/promises';
import type { WsClient } from '../../../src/api/ws/client.js';
import { startGate, until } from '../../helpers/in-process.js';
import { connect, deviceIn, type TestClient } from '../../helpers/ws-client.js';

// A client that stops reading must not hold up anyone: the others keep
// getting every change, the server keeps only one entry per device for the
// slow one, and once it reads again it gets the latest state (EVOK#141).

function rawSocket(client: TestClient): Socket {
  return (client.ws as unknown as { _socket: Socket })._socket;
}

async function serverSide(clients: ReadonlySet<WsClient>, connectClient: () => Promise<TestClient>) {
  const before = new Set(clients);
  const client = await connectClient();
  await until(() => clients.size > before.size, 'the server to register the client');
  return { client, server: [...clients].find((candidate) => !before.has(candidate))! };
}

test('a slow reader gets coalesced latest state; fast readers and the poll loop are unaffected', async () => {
  const gate = await startGate();
  const endpoint = gate.ws!;
  const { client: slow, server: slowSide } = await serverSide(endpoint.clients, () => connect(gate.wsUrl));
  const fast = [await connect(gate.wsUrl), await connect(gate.wsUrl)];
  try {
    rawSocket(slow).pause();
    const devices = [...gate.runtime.registry.devices()].filter((device) => device.eventCapable);
    const messageBytes = Buffer.byteLength(`[${devices.map((device) => device.json()).join(',')}]`);
    let published = 0;
    let maxBuffered = 0;
    let maxPending = 0;
    const flood = async (rounds: number) => {
      for (let i = 0; i < rounds; i++) {
        gate.runtime.feed.publish(devices);
        published++;
        maxBuffered = Math.max(maxBuffered, slowSide.socket.bufferedAmount);
        maxPending = Math.max(maxPending, slowSide.pendingCount);
        if (i % 8 === 7) await turn();
      }
    };
    // Fill the kernel's buffers towards the slow client until the server holds back.
    for (let i = 0; i < 2000 && slowSide.pendingCount === 0; i++) await flood(16);
    assert.ok(slowSide.pendingCount > 0, 'the slow client fell behind');

    // Real input changes still reach the fast clients at once, in order.
    const scansBefore = gate.runtime.slaves[0]!.stats.scans;
    let last = 0;
    for (const value of [1, 0, 1, 0, 1]) {
      gate.setInput(0, value === 1);
      for (const client of fast) await client.nextMatching((m) => deviceIn(m, 'di', '1_01')?.value === value);
      await flood(32);
      last = value;
    }
    assert.ok(gate.runtime.slaves[0]!.stats.scans > scansBefore, 'polling went on');

    assert.ok(maxPending <= devices.length, `at most one entry per device (${maxPending})`);
    assert.ok(maxBuffered < 16 * 1024 + 2 * messageBytes, `bytes waiting for the slow client stay bounded (${maxBuffered})`);

    rawSocket(slow).resume();
    await until(() => slowSide.pendingCount === 0 && slowSide.socket.bufferedAmount === 0, 'the slow client to catch up', 20_000);
    slow.send({ cmd: 'full', dev: 'di', circuit: '1_01' });
    const reply = await slow.reply(20_000);
    assert.equal(reply.value, last);
    const pushes = slow.received.filter((message) => Array.isArray(message));
    const lastSeen = pushes.filter((message) => deviceIn(message, 'di', '1_01')).at(-1);
    assert.equal(deviceIn(lastSeen, 'di', '1_01').value, last, 'the last state it was sent is the latest');
    assert.ok(pushes.length < published, `coalesced: ${pushes.length} messages for ${published} batches`);
  } finally {
    await Promise.all([...fast, slow].map((client) => client.close()));
    await gate.close();
  }
});

test('a peer that stops answering pings is dropped; a live one stays', async () => {
  // The live client shares this process's event loop: its pong is read one
  // loop turn after it was written, so the interval must exceed any stall a
  // busy machine gives that turn (40 ms did not, with both cores loaded).
  const gate = await startGate(undefined, { websocket: { heartbeatMs: 400 } });
  const endpoint = gate.ws!;
  const { client: dead, server: deadSide } = await serverSide(endpoint.clients, () => connect(gate.wsUrl));
  const { client: live, server: liveSide } = await serverSide(endpoint.clients, () => connect(gate.wsUrl));
  try {
    rawSocket(dead).pause();
    await once(deadSide.socket, 'close');
    assert.equal(endpoint.clients.has(deadSide), false);
    assert.equal(endpoint.clients.has(liveSide), true);
    live.send({ cmd: 'full', dev: 'do', circuit: '1_01' });
    assert.equal((await live.reply()).circuit, '1_01');
  } finally {
    rawSocket(dead).destroy();
    await live.close();
    await gate.close();
  }
});
