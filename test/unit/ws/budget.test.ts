import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { Socket } from 'node:net';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import WebSocket from 'ws';
import { CommandQueue, InvalidMessageLimiter, SharedTurnBudget, WS_BUDGET } from '../../../src/api/ws/budget.js';
import type { WsClient } from '../../../src/api/ws/client.js';
import { httpCall } from '../../helpers/http-call.js';
import { startGate, until, type Gate } from '../../helpers/in-process.js';
import { connect } from '../../helpers/ws-client.js';

// One WebSocket client cannot take the daemon down: a client that floods
// commands and never reads costs bounded memory and is closed past a limit;
// one that floods garbage is throttled and closed; a normal HTTP client keeps
// being served meanwhile. Asserted by counts and states, never by time.

function rawSocket(ws: WebSocket): Socket {
  return (ws as unknown as { _socket: Socket })._socket;
}

async function openRaw(gate: Gate): Promise<{ ws: WebSocket; server: WsClient }> {
  const before = new Set(gate.ws!.clients);
  const ws = new WebSocket(gate.wsUrl);
  await once(ws, 'open');
  await until(() => gate.ws!.clients.size > before.size, 'the server to register the client');
  return { ws, server: [...gate.ws!.clients].find((client) => !before.has(client))! };
}

/** `count` sequential GETs from a normal client; resolves with how many got a 200. */
async function normalClient(gate: Gate, count: number): Promise<number> {
  let ok = 0;
  for (let i = 0; i < count; i++) {
    const reply = await httpCall(gate.baseUrl, '/rest/di/1_01');
    if (reply.status === 200) ok++;
  }
  return ok;
}

test('the command queue coalesces repeats and refuses past its bounds', () => {
  const queue = new CommandQueue();
  const all = Buffer.from('{"cmd":"all"}');
  assert.equal(queue.push(all, false, true), 'queued');
  assert.equal(queue.push(Buffer.from('{"cmd":"all"}'), false, true), 'coalesced', 'a client behind on its replies');
  assert.equal(queue.push(Buffer.from('{"cmd":"all"}'), false, false), 'queued', 'a client that reads gets every reply');
  let verdict = 'queued';
  for (let i = 0; verdict === 'queued'; i++) verdict = queue.push(Buffer.from(`{"cmd":"all","n":${i}}`), false, true);
  assert.equal(verdict, 'overflow');
  assert.equal(queue.length, WS_BUDGET.MAX_QUEUED_COMMANDS);
  for (let i = 0; i < WS_BUDGET.MAX_QUEUED_COMMANDS; i++) assert.ok(queue.shift());
  assert.equal(queue.shift(), undefined);
  assert.equal(queue.push(Buffer.alloc(WS_BUDGET.MAX_QUEUED_BYTES + 1), false, false), 'overflow', 'bytes are bounded too');
});

test('command work is shared per event-loop turn across clients: past the budget, commands wait for the next turn, in the order they came', async () => {
  let clock = 0;
  const budget = new SharedTurnBudget(2, () => clock);
  const ran: Array<[string, number]> = [];
  let turn = 0;
  // Counts turns the same way: one setImmediate after another.
  const counter = (): void => {
    turn++;
    if (turn < 50) setImmediate(counter);
  };
  setImmediate(counter);
  // Each command costs 1.5 ms of the shared budget.
  const command = (client: string) => () => {
    ran.push([client, turn]);
    clock += 1.5;
    return Promise.resolve();
  };
  await Promise.all(['a', 'b', 'c', 'd', 'e', 'f'].map((client) => budget.run(command(client))));
  assert.deepEqual(ran.map(([client]) => client), ['a', 'b', 'c', 'd', 'e', 'f'], 'first come, first served');
  // 2 ms a turn at 1.5 ms a command: two commands (the second one starts under budget), then the turn ends.
  const turns = ran.map(([, at]) => at);
  for (let i = 2; i < turns.length; i += 2) assert.ok(turns[i]! > turns[i - 1]!, `command ${i} waited for a later turn: ${turns.join(', ')}`);
  for (let i = 1; i < turns.length; i += 2) assert.equal(turns[i], turns[i - 1], `commands ${i - 1} and ${i} shared a turn: ${turns.join(', ')}`);
});

test('command replies of all clients share a rate in bytes: past it, commands wait for bytes, in the order they came', async () => {
  let clock = 0;
  // A turn's time is no limit here (100 ms): only the 10,000 bytes a second, and as a burst, are.
  const budget = new SharedTurnBudget(100, () => clock, 10_000, 10_000);
  const ran: string[] = [];
  const command = (client: string) => () => {
    ran.push(client);
    budget.replied(6_000);
    return Promise.resolve();
  };
  const all = Promise.all(['a', 'b', 'c', 'd'].map((client) => budget.run(command(client))));
  // Two turns later: the burst paid for two replies of 6,000 bytes (the second drew it below zero), and no more.
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(ran, ['a', 'b']);
  // A second later the rate has paid the debt back and more: the others follow, in order.
  clock += 1000;
  await all;
  assert.deepEqual(ran, ['a', 'b', 'c', 'd']);
});

test('the invalid-message bucket forgives now and then, slows a stream of failures, closes a flood', () => {
  let now = 0;
  const limiter = new InvalidMessageLimiter(() => now);
  // Occasional garbage, one bad message a second for an hour: never held back.
  for (let i = 0; i < 3600; i++, now += 1000) {
    assert.equal(limiter.admit(0), 'allowed');
    limiter.failed();
  }
  // A client that errs as fast as it can, one message at a time: slowed to the refill rate, never closed.
  let waits = 0;
  for (let sent = 0; sent < 1000; ) {
    const verdict = limiter.admit(1);
    assert.notEqual(verdict, 'close');
    if (verdict === 'wait') {
      waits++;
      now += limiter.waitMs();
      continue;
    }
    limiter.failed();
    sent++;
  }
  assert.ok(waits >= 1000 - WS_BUDGET.INVALID_BURST, `${waits} waits`);
  // One that piles messages up while it waits is flooding: closed after INVALID_STRIKES waits.
  const verdicts: string[] = [];
  for (let i = 0; i < 10_000 && verdicts.at(-1) !== 'close'; i++) {
    const verdict = limiter.admit(WS_BUDGET.FLOOD_QUEUE);
    verdicts.push(verdict);
    if (verdict === 'allowed') limiter.failed();
  }
  assert.equal(verdicts.filter((verdict) => verdict === 'wait').length, WS_BUDGET.INVALID_STRIKES - 1);
  assert.equal(verdicts.at(-1), 'close');
});

test('a client that floods `all` and never reads: bounded backlog, closed past the queue limit, HTTP served', async () => {
  const gate = await startGate();
  try {
    const { ws, server } = await openRaw(gate);
    rawSocket(ws).pause(); // never reads a reply
    const closed = once(server.socket, 'close');
    let maxBuffered = 0;
    let maxQueued = 0;
    const watch = setInterval(() => {
      maxBuffered = Math.max(maxBuffered, server.socket.bufferedAmount);
      maxQueued = Math.max(maxQueued, server.queuedCommands);
    }, 1);
    // Distinct frames (a space apart), so coalescing alone cannot absorb them.
    for (let i = 0; i < 4 * WS_BUDGET.MAX_QUEUED_COMMANDS; i++) ws.send(i % 2 ? '{"cmd":"all"}' : '{"cmd": "all"}');
    const served = await normalClient(gate, 50);
    const [code] = (await closed) as [number];
    clearInterval(watch);
    assert.equal(served, 50, 'every request of the normal client was served');
    const allBytes = Buffer.byteLength((await httpCall(gate.baseUrl, '/rest/all')).text);
    assert.ok(maxBuffered <= WS_BUDGET.REPLY_BACKLOG_BYTES + 2 * allBytes, `backlog bounded (${maxBuffered} bytes)`);
    assert.ok(maxQueued <= WS_BUDGET.MAX_QUEUED_COMMANDS, `queue bounded (${maxQueued})`);
    assert.equal(code, 1006, 'cut off after the close grace (it never read the close frame)');
    assert.equal(gate.ws!.clients.has(server), false);
    ws.terminate();
  } finally {
    await gate.close();
  }
});

test('a client that floods garbage and unknown circuits is closed with 1008; HTTP is served meanwhile', async () => {
  const gate = await startGate();
  try {
    const { ws } = await openRaw(gate);
    const closed = once(ws, 'close');
    const flood = async () => {
      for (let i = 0; i < 4000 && ws.readyState === WebSocket.OPEN; i++) {
        ws.send(i % 2 ? '{not json' : `{"cmd":"set","dev":"do","circuit":"9_${i}","value":1}`);
        if (i % 100 === 99) await sleep(1);
      }
    };
    const [served] = await Promise.all([normalClient(gate, 50), flood()]);
    const [code] = (await closed) as [number];
    assert.equal(code, 1008);
    assert.equal(served, 50);
  } finally {
    await gate.close();
  }
});

test('garbage sent a little at a time is slowed, never disconnected', async () => {
  const gate = await startGate();
  const client = await connect(gate.wsUrl);
  try {
    for (let i = 0; i < WS_BUDGET.INVALID_BURST + 20; i++) client.send('garbage');
    client.send({ cmd: 'full', dev: 'do', circuit: '1_01' });
    const reply = await client.nextMatching((message) => !Array.isArray(message) && message.circuit === '1_01');
    assert.equal(reply.dev, 'do');
    assert.equal(client.ws.readyState, WebSocket.OPEN);
  } finally {
    await client.close();
    await gate.close();
  }
});
