import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { Server } from 'node:http';
import { test } from 'node:test';
import { admitConnections } from '../../../src/api/http/admission.js';

// The pools of admission, driven with stand-in sockets so remote addresses
// can be used: junk from the network cannot take the slots loopback clients
// need, and junk from loopback cannot take the network's.

class FakeSocket extends EventEmitter {
  destroyed = false;
  constructor(readonly remoteAddress: string) {
    super();
  }
  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.emit('close');
  }
}

function rig(maxConnections: number, maxConnectionsPerAddress = maxConnections) {
  const server = new EventEmitter() as unknown as Server;
  const stats = admitConnections(server, { maxConnections, maxConnectionsPerAddress });
  const sockets: FakeSocket[] = [];
  const connect = (address: string): FakeSocket => {
    const socket = new FakeSocket(address);
    server.emit('connection', socket);
    sockets.push(socket);
    return socket;
  };
  const open = (prefix: string) => sockets.filter((socket) => !socket.destroyed && socket.remoteAddress.startsWith(prefix)).length;
  return { stats, connect, open };
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
