import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { STILL_BOARD, startGate, until, type Gate } from '../../helpers/in-process.js';

// Webhook delivery to a real HTTP listener, with the simulated board's
// inputs moved by the test.

interface Received {
  method: string;
  contentType: string | undefined;
  body: string;
}

/** An HTTP listener that records requests; `answer` decides what happens to each. */
class Receiver {
  readonly requests: Received[] = [];
  readonly server: Server;
  private waiters: Array<() => void> = [];

  constructor(private answer: (res: ServerResponse, index: number) => void = (res) => res.end('ok')) {
    this.server = createServer((req: IncomingMessage, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (chunk: string) => (body += chunk));
      req.on('end', () => {
        this.requests.push({ method: req.method!, contentType: req.headers['content-type'], body });
        this.answer(res, this.requests.length - 1);
        for (const wake of this.waiters.splice(0)) wake();
      });
    });
  }

  async listen(port = 0): Promise<number> {
    this.server.listen(port, '127.0.0.1');
    await once(this.server, 'listening');
    return (this.server.address() as AddressInfo).port;
  }

  async nextRequest(count: number): Promise<Received> {
    while (this.requests.length < count) await new Promise<void>((resolve) => this.waiters.push(resolve));
    return this.requests[count - 1]!;
  }

  close(): void {
    this.server.closeAllConnections();
    this.server.close();
  }
}

/** The still board with a webhook to `port` (STILL_BOARD opens with `apis:`). */
function yaml(port: number, mask: string[], complex: boolean): string {
  const webhook = `  webhook:
    enabled: true
    address: http://127.0.0.1:${port}/hook
    device_mask: [${mask.join(', ')}]
    complex_events: ${complex}
`;
  return STILL_BOARD.replace('apis:\n', `apis:\n${webhook}`);
}

/** Resolves after the board was scanned a few more times, so what changed was seen. */
function scansLater(gate: Gate, count = 3): Promise<void> {
  const slave = gate.runtime.slaves[0]!;
  const target = slave.stats.scans + count;
  return until(() => slave.stats.scans >= target, 'more scans');
}

async function flip(gate: Gate, index: number): Promise<number> {
  const circuit = `1_0${index + 1}`;
  const now = (await (await fetch(`${gate.baseUrl}/rest/di/${circuit}`)).json()).value;
  gate.setInput(index, !now);
  return now ? 0 : 1;
}

test('GET mode: a change of a masked type sends a body-less GET; "input" masks DI (EVOK matched no DI)', async () => {
  const receiver = new Receiver();
  const port = await receiver.listen();
  const gate = await startGate(yaml(port, ['input'], false));
  try {
    // An output change is not in the mask: no request for it.
    const write = await fetch(`${gate.baseUrl}/json/do/1_01`, { method: 'POST', body: JSON.stringify({ value: 1 }) });
    assert.equal(write.status, 200);
    await flip(gate, 0);
    const request = await receiver.nextRequest(1);
    assert.equal(request.method, 'GET');
    assert.equal(request.body, '');
    assert.match(request.contentType ?? '', /^application\/json/);
    assert.equal(receiver.requests.length, 1, 'the output change sent nothing');
  } finally {
    await gate.close();
    receiver.close();
  }
});

test('POST mode: a JSON array of the masked devices in their current state', async () => {
  const receiver = new Receiver();
  const port = await receiver.listen();
  const gate = await startGate(yaml(port, ['di'], true));
  try {
    const value = await flip(gate, 1);
    const request = await receiver.nextRequest(1);
    assert.equal(request.method, 'POST');
    const devices = JSON.parse(request.body);
    assert.ok(Array.isArray(devices));
    assert.ok(devices.every((device: { dev: string }) => device.dev === 'di'));
    assert.equal(devices.find((device: { circuit: string }) => device.circuit === '1_02').value, value);
  } finally {
    await gate.close();
    receiver.close();
  }
});

test('receiver down, then up: retried with back-off, latest state delivered, nothing piles up', async () => {
  const probe = new Receiver();
  const port = await probe.listen();
  probe.close(); // the port is now free and refuses connections
  const gate = await startGate(yaml(port, ['di'], true), { webhook: { firstRetryMs: 10, maxRetryMs: 40, timeoutMs: 1000 } });
  const receiver = new Receiver();
  try {
    let last = 0;
    for (let i = 0; i < 6; i++) {
      last = await flip(gate, 0);
      await scansLater(gate);
      assert.ok(gate.webhook!.pendingCount <= 4, 'at most one entry per DI waits');
    }
    await receiver.listen(port);
    const request = await receiver.nextRequest(1);
    const devices = JSON.parse(request.body);
    assert.equal(devices.find((device: { circuit: string }) => device.circuit === '1_01').value, last);
  } finally {
    await gate.close();
    receiver.close();
  }
});

/** One sample of `/metrics`, by its full name with labels. */
async function metric(gate: Gate, name: string): Promise<number> {
  const text = await (await fetch(`${gate.baseUrl}/metrics`)).text();
  const line = text.split('\n').find((row) => row.startsWith(`${name} `));
  assert.ok(line, `${name} in /metrics`);
  return Number(line.slice(name.length + 1));
}

test('a receiver that hangs, answers 500, answers slowly, resets and drips: each attempt is cut at its deadline, then deliveries resume', async () => {
  const timeoutMs = 300;
  type Answer = (req: IncomingMessage, res: ServerResponse) => void;
  const timers: NodeJS.Timeout[] = [];
  const answers: Answer[] = [
    () => {}, // hangs: accepts the POST and never answers
    (_req, res) => res.writeHead(500).end('broken'),
    (_req, res) => void timers.push(setTimeout(() => res.end('late'), timeoutMs * 4)), // answers, but only well after the deadline
    (req) => req.socket.resetAndDestroy(),
    (_req, res) => {
      // drips: a head at once, then a byte every 20 ms without end
      res.writeHead(200, { 'content-type': 'text/plain' });
      const drip = setInterval(() => res.write('.'), 20);
      timers.push(drip);
      res.on('close', () => clearInterval(drip));
    },
  ];
  const closed: Array<Promise<unknown>> = [];
  const receiver = new Receiver((res, index) => {
    const req = res.req;
    // Not events.once: it rejects on 'error', and a socket that iogate cuts at its deadline while
    // bytes are still unread on its side ends in a reset (ECONNRESET here), which is a close too.
    req.socket.on('error', () => {});
    closed.push(new Promise((resolve) => req.socket.once('close', resolve)));
    (answers[index] ?? ((_r: IncomingMessage, ok: ServerResponse) => ok.end('ok')))(req, res);
  });
  const port = await receiver.listen();
  const gate = await startGate(yaml(port, ['di'], true), { webhook: { timeoutMs, firstRetryMs: 20, maxRetryMs: 80 } });
  try {
    await flip(gate, 0);
    // The fifth attempt (the drip) has come in: iogate has failed four times and is failing now.
    await receiver.nextRequest(5);
    assert.equal(await metric(gate, 'iogate_webhook_up'), 0, 'failing shows in /metrics');
    assert.equal(await metric(gate, 'iogate_webhook_deliveries_total'), 0);
    // Every socket of the five failed attempts is closed: hung, slow and dripping ones by iogate at their deadline.
    await Promise.all(closed.slice(0, 5));
    // The state at the time of the next attempt is what the now healthy receiver gets.
    const value = (await (await fetch(`${gate.baseUrl}/rest/di/1_01`)).json()).value;
    const request = await receiver.nextRequest(6);
    assert.equal(JSON.parse(request.body).find((device: { circuit: string }) => device.circuit === '1_01').value, value);
    // Later changes go out at once again (one request at a time: the sixth was answered before this one left).
    const next = await flip(gate, 1);
    const after = await receiver.nextRequest(7);
    assert.equal(JSON.parse(after.body).find((device: { circuit: string }) => device.circuit === '1_02').value, next);
    assert.ok((await metric(gate, 'iogate_webhook_deliveries_total')) >= 1);
    assert.equal(await metric(gate, 'iogate_webhook_up'), 1);
    assert.equal(await metric(gate, 'iogate_webhook_failed_total{reason="timeout"}'), 3, 'hang, slow and drip hit the deadline');
    assert.equal(await metric(gate, 'iogate_webhook_failed_total{reason="status"}'), 1, 'the 500');
    assert.equal(await metric(gate, 'iogate_webhook_failed_total{reason="network"}'), 1, 'the reset');
  } finally {
    for (const timer of timers) clearTimeout(timer);
    await gate.close();
    receiver.close();
  }
});

test('hung receivers hold no sockets: with every request hanging, each is aborted at its deadline and a new one is sent', async () => {
  const open = new Set<unknown>();
  let most = 0;
  const receiver = new Receiver((res) => {
    const socket = res.req.socket;
    open.add(socket);
    most = Math.max(most, open.size);
    socket.on('close', () => open.delete(socket));
  });
  const port = await receiver.listen();
  const gate = await startGate(yaml(port, ['di'], true), { webhook: { timeoutMs: 40, firstRetryMs: 5, maxRetryMs: 10 } });
  try {
    await flip(gate, 0);
    // Far more attempts than the four sockets the old code allowed to hang before it stopped for good.
    await receiver.nextRequest(12);
    assert.equal(most, 1, 'never more than one request open at the receiver');
    assert.ok((await metric(gate, 'iogate_webhook_failed_total{reason="timeout"}')) >= 11);
    assert.ok((await metric(gate, 'iogate_webhook_pending_devices')) >= 1, 'the change still waits');
  } finally {
    await gate.close();
    receiver.close();
  }
});

test('POST mode: a cover is delivered as it starts and stops moving', async () => {
  const receiver = new Receiver();
  const port = await receiver.listen();
  const covers = 'covers:\n  blind:\n    up: do/1_03\n    down: do/1_04\n    travel_up_s: 0.3\n    travel_down_s: 0.3\n    overrun_s: 0.1\n';
  const gate = await startGate(`${yaml(port, ['cover'], true)}${covers}`);
  try {
    const write = await fetch(`${gate.baseUrl}/rest/cover/blind`, { method: 'POST', body: new URLSearchParams({ command: 'open' }) });
    assert.equal(write.status, 200);
    const moving = JSON.parse((await receiver.nextRequest(1)).body) as Array<Record<string, unknown>>;
    assert.equal(moving[0]!['dev'], 'cover');
    assert.equal(moving[0]!['moving'], 'up');
    // About four deliveries a second while it moves, then the stop at the end of travel.
    for (let count = 2; ; count++) {
      const state = (JSON.parse((await receiver.nextRequest(count)).body) as Array<Record<string, unknown>>)[0]!;
      if (state['moving'] !== 'stopped') continue;
      assert.deepEqual([state['position'], state['calibrated']], [100, true]);
      break;
    }
  } finally {
    await gate.close();
    receiver.close();
  }
});

test('the first state: every masked device of the board goes out once at start, as after EVOK\'s first poll; then only changes', async () => {
  const receiver = new Receiver();
  const port = await receiver.listen();
  const gate = await startGate(yaml(port, ['di', 'do'], true), { firstStates: true });
  try {
    const first = await receiver.nextRequest(1);
    assert.equal(first.method, 'POST');
    const listed = async (type: string) => (await (await fetch(`${gate.baseUrl}/rest/${type}/all`)).json()) as object[];
    // EVOK's order within an event was arbitrary: compared as sets of whole objects.
    const sent = (JSON.parse(first.body) as Array<{ dev: string; circuit: string }>).sort((a, b) => `${a.dev} ${a.circuit}`.localeCompare(`${b.dev} ${b.circuit}`));
    assert.deepEqual(sent, [...(await listed('di')), ...(await listed('do'))]);
    // Once: later scans change nothing and send nothing, the next change sends itself alone.
    await scansLater(gate);
    assert.equal(receiver.requests.length, 1, 'the first state went out once');
    await flip(gate, 2);
    const change = JSON.parse((await receiver.nextRequest(2)).body) as Array<{ circuit: string }>;
    assert.deepEqual(change.map((device) => device.circuit), ['1_03']);
  } finally {
    await gate.close();
    receiver.close();
  }
});
