import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { afterEach, beforeEach, describe, mock, test } from 'node:test';
import { IDLE_EVICTIONS_PER_SECOND, admitConnections, keptExchange } from '../../../src/api/http/admission.js';
import { HEAD_GRACE_MS, PARKED_PER_CONNECTION } from '../../../src/api/http/parking.js';

// The pools of admission and the parking lot, driven with stand-in sockets so
// remote addresses can be used: junk from the network cannot take the slots
// loopback clients need, junk from loopback cannot take the network's, and
// an address at its cap parks its newcomers instead of evicting working
// connections. Requests through the lot are tested against the daemon
// (parking.test.ts).

class FakeSocket extends EventEmitter {
  destroyed = false;
  paused = false;
  /** Set when HTTP's own connection listener saw this socket. */
  http = false;
  constructor(readonly remoteAddress: string) {
    super();
  }
  pause(): void {
    this.paused = true;
  }
  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.emit('close');
  }
}

function rig(maxConnections: number, maxConnectionsPerAddress = maxConnections) {
  const server = Object.assign(new EventEmitter(), { idleClosed: 0, closeIdleConnections: () => server.idleClosed++ }) as unknown as Server & { idleClosed: number };
  // Stands for HTTP's connection listener, registered by createServer before admission.
  server.on('connection', (socket: FakeSocket) => (socket.http = true));
  const { stats, requestStarted } = admitConnections(server, { maxConnections, maxConnectionsPerAddress });
  // Admission adds no 'request' listener: the server's one listener calls requestStarted (each more costs every request).
  assert.equal(server.listenerCount('request'), 0);
  const sockets: FakeSocket[] = [];
  const connect = (address: string): FakeSocket => {
    const socket = new FakeSocket(address);
    server.emit('connection', socket);
    sockets.push(socket);
    return socket;
  };
  /** Connections of `prefix` holding a slot: open and in HTTP (parked ones are open but hold none). */
  const open = (prefix: string) => sockets.filter((socket) => socket.http && !socket.destroyed && socket.remoteAddress.startsWith(prefix)).length;
  /** One bodiless request on `socket`, answered: the connection is then an idle keep-alive one. Returns the response. */
  const answer = (socket: FakeSocket): object => {
    const req = Object.assign(new EventEmitter(), { socket, headers: {} });
    const res = Object.assign(new EventEmitter(), { req, writableFinished: false });
    // What the HTTP server's one 'request' listener calls first.
    requestStarted(req as unknown as IncomingMessage, res as unknown as ServerResponse);
    req.emit('end');
    res.writableFinished = true;
    res.emit('finish');
    return res;
  };
  return { server, stats, connect, open, answer };
}

test('remote junk holds at most three quarters; loopback clients still get in without evicting', () => {
  const { connect, open, stats } = rig(8);
  for (let i = 0; i < 100; i++) connect(`10.0.${i}.1`);
  assert.equal(open('10.'), 6, 'the remote pool is capped at 3/4 of 8');
  const local = [connect('127.0.0.1'), connect('127.0.0.1')];
  assert.ok(local.every((socket) => !socket.destroyed));
  assert.equal(open('10.'), 6, 'the reserve was free: nothing evicted for it');
  assert.equal(stats.open, 8);
});

test('loopback junk holds at most three quarters; remote clients still get in', () => {
  const { connect, open } = rig(8);
  for (let i = 0; i < 100; i++) connect('127.0.0.1');
  assert.equal(open('127.'), 6);
  const remote = connect('192.0.2.7');
  assert.equal(remote.destroyed, false);
});

test('when the total is full, a newcomer evicts from the larger pool', () => {
  const { connect, open } = rig(8);
  for (let i = 0; i < 6; i++) connect(`10.0.0.${i}`);
  connect('127.0.0.1');
  connect('127.0.0.1');
  const third = connect('127.0.0.1');
  assert.equal(third.destroyed, false);
  assert.equal(open('10.'), 5, 'one remote connection made room');
  assert.equal(open('127.'), 3);
});

test('one address is capped by max_connections_per_address', () => {
  const { connect, open, stats } = rig(64, 4);
  for (let i = 0; i < 20; i++) connect('10.9.9.9');
  assert.equal(open('10.9.9.9'), 4);
  assert.equal(stats.parking.parked, 16, 'the rest wait in the parking lot');
  assert.equal(connect('10.1.1.1').destroyed, false);
});

test('an address whose slots all hold answered idle connections: its newcomers are parked before HTTP sees them, and nothing is evicted', () => {
  const { connect, answer, stats } = rig(1024, 4);
  const first = Array.from({ length: 4 }, () => connect('10.7.7.7'));
  first.forEach(answer);
  const later = Array.from({ length: 100 }, () => connect('10.7.7.7'));
  assert.ok(later.every((socket) => !socket.http && !socket.destroyed), 'parked: open, not in HTTP');
  assert.ok(first.every((socket) => !socket.destroyed), 'the working connections stay');
  assert.equal(stats.parking.parked, 100);
  assert.equal(stats.evicted, 0);
  assert.equal(stats.refused, 0);
  assert.equal(stats.open, 4, 'parked sockets take no slot');
  // Another address is admitted as before.
  const other = connect('10.8.8.8');
  assert.equal(other.http, true);
});

describe('with the clock', () => {
  beforeEach(() => {
    mock.timers.enable({ apis: ['Date', 'setInterval'], now: 1_000_000 });
    // Admission ages connections on the monotonic clock; here it follows the mocked one.
    mock.method(performance, 'now', () => Date.now());
  });
  afterEach(() => {
    mock.timers.reset();
    mock.restoreAll();
  });

  test('heads still incomplete after the grace time are junk: a newcomer of the same address evicts the oldest; young ones are not evicted', () => {
    const { connect, stats } = rig(1024, 4);
    const trickling = Array.from({ length: 4 }, () => connect('10.7.7.7'));
    const early = connect('10.7.7.7');
    assert.equal(early.http, false, 'young heads may still complete: the newcomer is parked');
    assert.equal(stats.evicted, 0);
    mock.timers.tick(HEAD_GRACE_MS);
    const late = connect('10.7.7.7');
    assert.equal(late.http, true, 'admitted in place of the oldest trickling head');
    assert.equal(trickling[0]!.destroyed, true);
    assert.ok(trickling.slice(1).every((socket) => !socket.destroyed));
    assert.equal(stats.evicted, 1);
  });

  test('a parked socket that sends nothing, or only part of a head, within the grace time is closed', () => {
    const { connect, answer, stats } = rig(1024, 1);
    answer(connect('10.7.7.7'));
    const silent = connect('10.7.7.7');
    const partial = connect('10.7.7.7');
    partial.emit('data', Buffer.from('GET /rest/all HTTP/1.1\r\nHost: x\r\nX-Slow: '));
    assert.equal(stats.parking.parked, 2);
    mock.timers.tick(HEAD_GRACE_MS * 2);
    assert.equal(silent.destroyed, true);
    assert.equal(partial.destroyed, true);
    assert.equal(stats.parking.parked, 0);
    assert.equal(stats.parking.closedJunk, 2);
  });
});

test(`the lot is bounded (${PARKED_PER_CONNECTION} × max_connections, three quarters per pool): when full, a newcomer takes the place of the socket idle longest, within its address's budget, else is closed at once`, () => {
  const { server, connect, answer, stats } = rig(2, 2);
  // Remote pool: one slot for the address (3/4 of 2), and 96 parked sockets (3/4 of 64 × 2).
  const poolCap = (2 * PARKED_PER_CONNECTION * 3) / 4;
  const sockets: FakeSocket[] = [];
  for (let i = 0; i < 1 + poolCap + IDLE_EVICTIONS_PER_SECOND + 5; i++) {
    const socket = connect('10.7.7.7');
    sockets.push(socket);
    if (socket.http) answer(socket);
  }
  assert.equal(stats.parking.parked, poolCap);
  assert.equal(stats.parking.evicted, IDLE_EVICTIONS_PER_SECOND);
  assert.equal(stats.refused, 5);
  const parked = sockets.filter((socket) => !socket.destroyed && !socket.http);
  assert.equal(parked.length, poolCap);
  assert.ok(sockets[1]!.destroyed, 'the socket parked first was the first to go');
  parked[0]!.destroy();
  assert.equal(stats.parking.parked, poolCap - 1, 'a parked socket that closes leaves the lot');
  // Shutdown's first step closes idle connections: the lot is emptied too, and HTTP's own sweep still runs.
  server.closeIdleConnections();
  assert.equal(stats.parking.parked, 0);
  assert.ok(parked.every((socket) => socket.destroyed));
  assert.equal(server.idleClosed, 1);
});

test('the last answered exchange stays alive until the next one is answered, so a quiet collection leaves the request path its shapes', () => {
  const { connect, answer } = rig(8);
  const first = answer(connect('127.0.0.1'));
  assert.equal(keptExchange(), first as unknown);
  const second = answer(connect('127.0.0.2'));
  assert.equal(keptExchange(), second as unknown, 'one exchange only: the newest replaces it');
});
