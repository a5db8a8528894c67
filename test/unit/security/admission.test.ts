import assert from 'node:assert/strict';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import WebSocket from 'ws';
import { spawnDaemon, type SpawnedDaemon } from '../../helpers/spawn-daemon.js';
import { SIMULATED_BUS, configFile, httpCall } from '../../helpers/http-call.js';

// Admission before authentication, against the built daemon with small
// limits: slow headers, bodies that never end and idle keep-alive
// connections fill the slots, and a normal client that sends its requests
// promptly is still served every time. Scaled-down versions of the attacks in
// bench/abuse.mjs; asserted by counts and states.

const LIMIT = 16;

async function start(limits: string[], extra = ''): Promise<SpawnedDaemon> {
  const yaml = ['apis:', '  websocket: {enabled: true}', '  limits:', ...limits.map((line) => `    ${line}`), extra, SIMULATED_BUS].join('\n');
  const { dir, file } = configFile(yaml);
  return spawnDaemon(['--config', file], { cwd: dir });
}

function openSocket(port: number, localAddress = '127.0.0.1'): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: '127.0.0.1', localAddress });
    socket.once('connect', () => {
      socket.off('error', reject);
      socket.on('error', () => undefined); // being cut off is what these sockets are for
      socket.resume(); // read (and drop) whatever comes, so a close is noticed
      resolve(socket);
    });
    socket.once('error', reject);
  });
}

/** `count` sequential GETs, each on a fresh connection; how many were answered 200. */
async function normalClient(baseUrl: string, count: number): Promise<number> {
  let served = 0;
  for (let i = 0; i < count; i++) {
    const reply = await httpCall(baseUrl, '/rest/di/1_01').catch(() => undefined);
    if (reply?.status === 200) served++;
  }
  return served;
}

function rssMb(daemon: SpawnedDaemon): number {
  const status = readFileSync(`/proc/${daemon.child.pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024;
}

function closedCount(sockets: Socket[]): number {
  return sockets.filter((socket) => socket.destroyed || socket.readyState === 'closed').length;
}

describe('admission under attack', () => {
  let daemon: SpawnedDaemon;
  let port: number;
  before(async () => {
    daemon = await start([`max_connections: ${LIMIT}`, 'max_connections_per_address: 12', 'max_websocket_clients: 4', 'request_timeout_ms: 1500', 'headers_timeout_ms: 1000']);
    port = Number(new URL(daemon.baseUrl).port);
  });
  after(async () => assert.equal(await daemon.stop(), 0));

  test('slowloris: 6× the limit in sockets trickling headers; the normal client is served every time', async () => {
    const attackers: Socket[] = [];
    const trickle = setInterval(() => {
      for (const socket of attackers) if (!socket.destroyed) socket.write('X');
    }, 20);
    try {
      for (let i = 0; i < 6 * LIMIT; i++) {
        const socket = await openSocket(port);
        socket.write('GET /rest/di/1_01 HTTP/1.1\r\nX-Slow: ');
        attackers.push(socket);
      }
      assert.equal(await normalClient(daemon.baseUrl, 30), 30);
      // Past the address's slots they are parked, and a parked head still trickling after the grace time is closed.
      const deadline = Date.now() + 10_000;
      while (closedCount(attackers) < 6 * LIMIT - LIMIT && Date.now() < deadline) await sleep(50);
      assert.ok(closedCount(attackers) >= 6 * LIMIT - LIMIT, `at most the limit stays open (${attackers.length - closedCount(attackers)} open)`);
    } finally {
      clearInterval(trickle);
      for (const socket of attackers) socket.destroy();
    }
  });

  test('chunked bodies that never end: cut off by the request deadline, the normal client served meanwhile', async () => {
    const attackers: Socket[] = [];
    for (let i = 0; i < 2 * LIMIT; i++) {
      const socket = await openSocket(port);
      socket.write('POST /rest/do/1_01 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nv\r\n');
      attackers.push(socket);
    }
    const drip = setInterval(() => {
      for (const socket of attackers) if (!socket.destroyed) socket.write('1\r\na\r\n');
    }, 50);
    try {
      assert.equal(await normalClient(daemon.baseUrl, 30), 30);
      // The ones still admitted get 408 and are closed once request_timeout_ms has passed.
      const deadline = Date.now() + 10_000;
      while (closedCount(attackers) < attackers.length && Date.now() < deadline) await sleep(50);
      assert.equal(closedCount(attackers), attackers.length, 'every never-ending body was cut off');
    } finally {
      clearInterval(drip);
      for (const socket of attackers) socket.destroy();
    }
  });

  test('idle keep-alive connections, 20× the limit from one address: every one answered and kept open, none evicted, other clients served, RSS bounded', async () => {
    const before = rssMb(daemon);
    const idle: Socket[] = [];
    const answers: Promise<unknown>[] = [];
    for (let i = 0; i < 20 * LIMIT; i++) {
      const socket = await openSocket(port, '127.0.0.2');
      answers.push(once(socket, 'data'));
      socket.write('GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
      idle.push(socket);
      if (i % 32 === 31) await sleep(5);
    }
    try {
      // Past the address's 12 slots each is parked: served, then kept open at little cost, so it has no reason to reconnect.
      await Promise.all(answers);
      assert.equal(await normalClient(daemon.baseUrl, 30), 30);
      // Only the 12 holding the address's slots may have gone, at the keep-alive timeout of an HTTP connection.
      assert.ok(closedCount(idle) <= 12, `${closedCount(idle)} idle connections closed`);
      assert.ok(rssMb(daemon) < before + 30, `RSS ${rssMb(daemon).toFixed(1)} MB, was ${before.toFixed(1)} MB`);
    } finally {
      for (const socket of idle) socket.destroy();
    }
  });

  test('idle keep-alive connections from the normal client\'s own address: the normal client is still served every time', async () => {
    const idle: Socket[] = [];
    const answers: Promise<unknown>[] = [];
    for (let i = 0; i < 20 * LIMIT; i++) {
      const socket = await openSocket(port);
      answers.push(once(socket, 'data'));
      socket.write('GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
      idle.push(socket);
    }
    try {
      await Promise.all(answers);
      assert.equal(await normalClient(daemon.baseUrl, 30), 30);
      assert.ok(closedCount(idle) <= 12, `${closedCount(idle)} idle connections closed`);
    } finally {
      for (const socket of idle) socket.destroy();
    }
  });

  test('one address is capped; beyond its slots, connections that send nothing are closed; another loopback address still gets in', async () => {
    const held: Socket[] = [];
    for (let i = 0; i < 14; i++) held.push(await openSocket(port, '127.0.0.2'));
    const deadline = Date.now() + 10_000;
    while (closedCount(held) < 2 && Date.now() < deadline) await sleep(25);
    assert.equal(held.length - closedCount(held), 12, 'max_connections_per_address from 127.0.0.2 stay open');
    assert.equal(await normalClient(daemon.baseUrl, 5), 5);
    for (const socket of held) socket.destroy();
  });

  test('when every slot holds a WebSocket nothing is evicted: a new connection is served from the parking lot, and a WebSocket opens there too', async () => {
    // Loopback clients may hold three quarters of max_connections (the rest is the network's reserve): 3 of 4.
    const capped = await start(['max_connections: 4']);
    const sockets: WebSocket[] = [];
    try {
      for (let i = 0; i < 3; i++) {
        const ws = new WebSocket(capped.baseUrl.replace('http:', 'ws:') + '/ws');
        await once(ws, 'open');
        sockets.push(ws);
      }
      const reply = await httpCall(capped.baseUrl, '/rest/di/1_01');
      assert.equal(reply.status, 200);
      const fourth = new WebSocket(capped.baseUrl.replace('http:', 'ws:') + '/ws');
      sockets.push(fourth);
      await once(fourth, 'open');
      const message = once(fourth, 'message');
      fourth.send('{"cmd":"full"}');
      assert.ok(Array.isArray(JSON.parse(String((await message)[0]))));
      assert.ok(sockets.every((ws) => ws.readyState === WebSocket.OPEN), 'no WebSocket was evicted');
    } finally {
      for (const ws of sockets) ws.terminate();
      assert.equal(await capped.stop(), 0);
    }
  });
});
