import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { OwserverClient, OwserverError, tcpDialer } from '../../../src/owserver/client.js';
import { HEADER_BYTES, encodeReply } from '../../../src/owserver/protocol.js';
import { TestOwserver } from '../../helpers/owserver.js';

// The owserver client over real TCP: listings and reads, and every way a
// server can fail it, each a clear error of its kind within the deadline.

let owserver: TestOwserver;
let client: OwserverClient;
const TIMEOUT_MS = 300;

before(async () => {
  owserver = await TestOwserver.start(['28', '26', '29']);
  client = new OwserverClient({ dial: tcpDialer('127.0.0.1', owserver.port), timeoutMs: TIMEOUT_MS, where: owserver.where });
});
after(() => owserver.stop());

const kindOf = async (promise: Promise<unknown>): Promise<string> => {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof OwserverError, `expected an OwserverError, got ${String(error)}`);
    return error.kind;
  }
  return 'no error';
};

test('dirall and dir list the same devices; reads return owserver text and numbers', async () => {
  owserver.behaviour = 'serve';
  const addresses = owserver.devices.addresses.map((address) => `/${address}`);
  assert.deepEqual(await client.dirall('/'), addresses);
  assert.deepEqual(await client.dir('/'), addresses);
  const [thermometer] = owserver.devices.addresses;
  owserver.devices.setTemperature(thermometer!, 23.4375);
  assert.equal(await client.read(`/${thermometer}/temperature`), '     23.4375');
  assert.equal(await client.readNumber(`/${thermometer}/temperature`), 23.4375);
  assert.equal(await client.read(`/${thermometer}/type`), 'DS18B20');
});

test("a path owserver does not know is a 'server' error", async () => {
  owserver.behaviour = 'serve';
  assert.equal(await kindOf(client.read('/28.000000000000.00/temperature')), 'server');
});

test("a stopped owserver is 'unreachable' at once; a silent one is a 'timeout' after the deadline", async () => {
  const gone = await TestOwserver.start();
  const port = gone.port;
  await gone.stop();
  const toNowhere = new OwserverClient({ dial: tcpDialer('127.0.0.1', port), timeoutMs: TIMEOUT_MS, where: 'gone' });
  assert.equal(await kindOf(toNowhere.dirall('/')), 'unreachable');

  owserver.behaviour = 'silent';
  const started = performance.now();
  assert.equal(await kindOf(client.read('/x/temperature')), 'timeout');
  assert.ok(performance.now() - started >= TIMEOUT_MS - 5, 'waited for the deadline');
});

test("garbage, a truncated reply, a huge length field and a non-number are 'protocol' errors", async () => {
  const huge = Buffer.alloc(HEADER_BYTES);
  huge.writeInt32BE(0x7fff_ffff, 4);
  const replies: Array<[string, Buffer]> = [
    ['garbage', Buffer.from('HTTP/1.1 400 Bad Request\r\n\r\nnot an owserver at all')],
    ['truncated', encodeReply(12, Buffer.from('     23.4375')).subarray(0, 30)],
    ['huge length', huge],
    ['not a number', encodeReply(5, Buffer.from('hello'))],
  ];
  for (const [what, bytes] of replies) {
    owserver.behaviour = (socket) => socket.once('data', () => socket.end(bytes));
    assert.equal(await kindOf(client.readNumber('/28.5A1700000000.D2/temperature')), 'protocol', what);
  }
  // A server that sends a huge length and then keeps streaming is cut off, not buffered.
  owserver.behaviour = (socket) =>
    socket.once('data', () => {
      socket.write(huge);
      const spam = setInterval(() => (socket.destroyed ? clearInterval(spam) : socket.write(Buffer.alloc(64 * 1024))), 1);
    });
  assert.equal(await kindOf(client.read('/x')), 'protocol');
  owserver.behaviour = 'serve';
});

test('keep-alive messages before the reply are skipped', async () => {
  const ping = Buffer.alloc(HEADER_BYTES);
  ping.writeInt32BE(-1, 4);
  owserver.behaviour = (socket) => socket.once('data', () => {
    socket.write(ping);
    setTimeout(() => socket.end(encodeReply(7, Buffer.from('DS18B20'))), 20);
  });
  assert.equal(await client.read('/28.5A1700000000.D2/type'), 'DS18B20');
  owserver.behaviour = 'serve';
});

test('abortAll ends a request under way instead of leaving it to its deadline', async () => {
  owserver.behaviour = 'silent';
  const patient = new OwserverClient({ dial: tcpDialer('127.0.0.1', owserver.port), timeoutMs: 60_000, where: owserver.where });
  const connections = owserver.connections;
  const pending = kindOf(patient.read('/x/temperature'));
  while (owserver.connections === connections) await new Promise((resolve) => setTimeout(resolve, 5));
  patient.abortAll();
  const outcome = await Promise.race([pending, new Promise((resolve) => setTimeout(() => resolve('still waiting'), 5000))]);
  assert.equal(outcome, 'protocol');
  owserver.behaviour = 'serve';
});
