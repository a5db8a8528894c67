import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { Server } from 'node:http';
import { test } from 'node:test';
import { IDLE_EVICTIONS_PER_SECOND, admitConnections } from '../../../src/api/http/admission.js';

// The pools of admission, driven with stand-in sockets so remote addresses
// can be used: junk from the network cannot take the slots loopback clients
// need, and junk from loopback cannot take the network's.

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
  const stats = admitConnections(server, { maxConnections, maxConnectionsPerAddress });
  const sockets: FakeSocket[] = [];
  const connect = (address: string): FakeSocket => {
    const socket = new FakeSocket(address);
    server.emit('connection', socket);
    sockets.push(socket);
    return socket;
  };
  const open = (prefix: string) => sockets.filter((socket) => !socket.destroyed && socket.remoteAddress.startsWith(prefix)).length;
  /** One bodiless request on `socket`, answered: the connection is then an idle keep-alive one. */
  const answer = (socket: FakeSocket): void => {
    const req = Object.assign(new EventEmitter(), { socket, headers: {} });
    const res = Object.assign(new EventEmitter(), { writableFinished: false });
    server.emit('request', req, res);
    req.emit('end');
    res.writableFinished = true;
    res.emit('finish');
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
  const { connect, open } = rig(64, 4);
  for (let i = 0; i < 20; i++) connect('10.9.9.9');
  assert.equal(open('10.9.9.9'), 4);
  assert.equal(connect('10.1.1.1').destroyed, false);
});

test('an address evicts its answered idle connections only up to its budget; its next newcomers are held, unread, before HTTP sees them', () => {
  const { connect, answer, stats } = rig(1024, 4);
  const first = Array.from({ length: 4 }, () => connect('10.7.7.7'));
  first.forEach(answer);
  // Each newcomer is answered at once and goes idle, as the idle keep-alive attacker's do.
  const later: FakeSocket[] = [];
  for (let i = 0; i < IDLE_EVICTIONS_PER_SECOND + 50; i++) {
    const socket = connect('10.7.7.7');
    later.push(socket);
    if (socket.http) answer(socket);
  }
  const held = later.filter((socket) => !socket.destroyed && !socket.http);
  assert.ok(stats.evicted >= IDLE_EVICTIONS_PER_SECOND && stats.evicted <= IDLE_EVICTIONS_PER_SECOND + 2, `evicted ${stats.evicted}`);
  assert.ok(held.length >= 48, `held ${held.length}`);
  assert.ok(held.every((socket) => socket.paused), 'held sockets are not read');
  assert.equal(stats.held, held.length);
  assert.equal(stats.tarpitted, held.length);
  assert.equal(stats.open, 4, 'held sockets take no slot');
  assert.equal(stats.refused, 0);
  // Another address is admitted as before.
  const other = connect('10.8.8.8');
  assert.equal(other.http, true);
  assert.equal(other.destroyed, false);
});

test('unanswered heads (slowloris) are evicted without drawing on the budget: a prompt client of the same address still gets in', () => {
  const { connect, stats } = rig(1024, 4);
  for (let i = 0; i < 10 * IDLE_EVICTIONS_PER_SECOND; i++) connect('10.7.7.7');
  assert.equal(stats.held, 0);
  assert.equal(stats.evicted, 10 * IDLE_EVICTIONS_PER_SECOND - 4);
});

test('the tarpit is bounded (32 × max_connections): beyond it a newcomer is closed at once; held sockets are let go when they close or when idle connections are closed', () => {
  const { server, connect, answer, stats } = rig(2, 2);
  // Remote pool cap: 3/4 of 2 = 1 slot for the address.
  const sockets: FakeSocket[] = [];
  for (let i = 0; i < IDLE_EVICTIONS_PER_SECOND + 1 + 64 + 5; i++) {
    const socket = connect('10.7.7.7');
    sockets.push(socket);
    if (socket.http) answer(socket);
  }
  assert.equal(stats.held, 64, 'tarpit full at 32 × 2');
  assert.ok(stats.refused >= 4 && stats.refused <= 5, `refused ${stats.refused}`);
  const held = sockets.filter((socket) => !socket.destroyed && !socket.http);
  assert.equal(held.length, 64);
  held[0]!.destroy();
  assert.equal(stats.held, 63, 'a held socket that closes leaves the tarpit');
  // Shutdown's first step closes idle connections: the tarpit is emptied too, and HTTP's own sweep still runs.
  server.closeIdleConnections();
  assert.equal(stats.held, 0);
  assert.ok(held.every((socket) => socket.destroyed));
  assert.equal(server.idleClosed, 1);
});
