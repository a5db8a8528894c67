import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import WebSocket from 'ws';
import { spawnDaemon, type SpawnedDaemon } from '../../helpers/spawn-daemon.js';
import { SIMULATED_BUS, configFile, httpCall } from '../../helpers/http-call.js';

// The parking lot against the built daemon: an address holding all its slots
// with working (answered, idle) connections gets its next connections parked,
// and a client on a parked connection sees plain HTTP/1.1: answers, keep-alive,
// bodies, pipelining, `Connection: close`, WebSocket upgrades. The connections
// holding the slots are never evicted for it. What is asserted is what the
// client reads on the wire.

const PER_ADDRESS = 4;

/** A raw HTTP/1.1 client on one socket: each `send` resolves with the next complete reply. */
class RawClient {
  private buffer = Buffer.alloc(0);
  private waiting: Array<(reply: Reply) => void> = [];
  closed = false;
  readonly closedPromise: Promise<void>;

  private constructor(readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      this.drain();
    });
    socket.on('error', () => undefined);
    this.closedPromise = once(socket, 'close').then(() => {
      this.closed = true;
    });
  }

  static async open(port: number): Promise<RawClient> {
    const socket = connect({ port, host: '127.0.0.1' });
    await once(socket, 'connect');
    return new RawClient(socket);
  }

  send(text: string): Promise<Reply> {
    const reply = this.next();
    this.socket.write(text);
    return reply;
  }

  next(): Promise<Reply> {
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      this.drain();
    });
  }

  private drain(): void {
    while (this.waiting.length > 0) {
      const headEnd = this.buffer.indexOf('\r\n\r\n');
      if (headEnd < 0) return;
      const head = this.buffer.subarray(0, headEnd).toString('latin1');
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
      if (this.buffer.length < headEnd + 4 + length) return;
      const body = this.buffer.subarray(headEnd + 4, headEnd + 4 + length).toString('utf8');
      this.buffer = this.buffer.subarray(headEnd + 4 + length);
      const [statusLine, ...lines] = head.split('\r\n');
      const headers = Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]));
      this.waiting.shift()!({ status: Number(statusLine!.split(' ')[1]), headers, body });
    }
  }
}

interface Reply {
  status: number;
  headers: Record<string, string>;
  body: string;
}

const get = (path: string, extra = ''): string => `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${extra}\r\n`;

describe('parked connections', () => {
  let daemon: SpawnedDaemon;
  let port: number;
  /** The connections that hold the address's slots: answered once, then idle. */
  const holders: RawClient[] = [];

  before(async () => {
    const yaml = ['apis:', '  websocket: {enabled: true}', '  limits:', `    max_connections_per_address: ${PER_ADDRESS}`, SIMULATED_BUS].join('\n');
    const { dir, file } = configFile(yaml);
    daemon = await spawnDaemon(['--config', file], { cwd: dir });
    port = Number(new URL(daemon.baseUrl).port);
    for (let i = 0; i < PER_ADDRESS; i++) {
      const holder = await RawClient.open(port);
      assert.equal((await holder.send(get('/version'))).status, 200);
      holders.push(holder);
    }
  });

  after(async () => {
    for (const holder of holders) holder.socket.destroy();
    assert.equal(await daemon.stop(), 0);
  });

  const holdersStillOpen = (): void => assert.ok(holders.every((holder) => !holder.closed), 'no slot holder was evicted');

  /** One counter or gauge of `GET /metrics` (asked on a connection of its own: parked too). */
  const metric = async (name: string): Promise<number> => {
    const text = (await httpCall(daemon.baseUrl, '/metrics')).text;
    const match = new RegExp(`^${name} (\\d+)$`, 'm').exec(text);
    assert.ok(match, `${name} in /metrics`);
    return Number(match[1]);
  };

  test('a newcomer is answered, and answered again on the same connection (keep-alive)', async () => {
    const requestsBefore = await metric('iogate_http_parked_requests_total');
    const allBefore = await metric('iogate_http_requests_total');
    const parked = await RawClient.open(port);
    const direct = await httpCall(daemon.baseUrl, '/rest/di/1_01');
    for (let i = 0; i < 3; i++) {
      const reply = await parked.send(get('/rest/di/1_01'));
      assert.equal(reply.status, 200);
      assert.equal(reply.headers['content-type'], direct.headers['content-type']);
      assert.equal(JSON.parse(reply.body).circuit, '1_01');
    }
    assert.equal(parked.closed, false, 'the parked connection stays open between requests');
    parked.socket.destroy();
    holdersStillOpen();
    // Counted as parked: this one, httpCall's connections and the metrics requests.
    assert.ok((await metric('iogate_http_parked_requests_total')) >= requestsBefore + 3 + 1);
    // Every request is counted, parked or not: the direct one, the three, and the metrics request itself.
    assert.ok((await metric('iogate_http_requests_total')) >= allBefore + 1 + 3 + 1);
    assert.equal(await metric('iogate_http_connections'), PER_ADDRESS, 'the holders keep the slots');
    assert.equal(await metric('iogate_http_evicted_total'), 0);
  });

  test('a write with a body is applied and confirmed', async () => {
    const parked = await RawClient.open(port);
    for (const value of [1, 0]) {
      const body = `value=${value}`;
      const reply = await parked.send(
        `POST /rest/do/1_01 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
      );
      assert.equal(reply.status, 200);
      assert.deepEqual([JSON.parse(reply.body).success, JSON.parse(reply.body).result.value], [true, value]);
      const read = await parked.send(get('/rest/do/1_01'));
      assert.equal(JSON.parse(read.body).value, value);
    }
    parked.socket.destroy();
    holdersStillOpen();
  });

  test('pipelined requests are answered in order; `Connection: close` is honoured', async () => {
    const parked = await RawClient.open(port);
    const replies = [parked.next(), parked.next(), parked.next()];
    parked.socket.write(get('/rest/di/1_01') + get('/rest/do/1_02') + get('/version', 'Connection: close\r\n'));
    const [first, second, third] = await Promise.all(replies);
    assert.equal(JSON.parse(first!.body).circuit, '1_01');
    assert.equal(JSON.parse(second!.body).circuit, '1_02');
    assert.equal(third!.status, 200);
    assert.equal(third!.headers.connection, 'close');
    await parked.closedPromise;
    holdersStillOpen();
  });

  test('a WebSocket opened on a parked connection works like any other', async () => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`);
    await once(ws, 'open');
    const message = once(ws, 'message');
    ws.send(JSON.stringify({ cmd: 'full' }));
    const [data, isBinary] = (await message) as [Buffer, boolean];
    assert.equal(isBinary, false, 'a text frame, as EVOK sends');
    assert.ok(Array.isArray(JSON.parse(data.toString())));
    ws.close();
    await once(ws, 'close');
    holdersStillOpen();
  });

  test('a parked connection that trickles its head, or sends nothing, is closed; the holders are not', async () => {
    const trickler = await RawClient.open(port);
    trickler.socket.write('GET /rest/all HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ');
    const drip = setInterval(() => trickler.socket.write('x'), 50);
    const silent = await RawClient.open(port);
    try {
      await Promise.all([trickler.closedPromise, silent.closedPromise]);
    } finally {
      clearInterval(drip);
    }
    holdersStillOpen();
    // Still answering: the address's slots are held, so this one is parked as well.
    const parked = await RawClient.open(port);
    assert.equal((await parked.send(get('/version'))).status, 200);
    parked.socket.destroy();
  });
});
