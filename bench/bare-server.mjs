// The yardstick: the plainest node:http server that answers a GET with fixed
// bytes. It serves, per path, exactly the status line, headers and body iogate
// answered with (captured by run.mjs), so the two differ only in the work done
// between parsing a request and writing the reply.
//
// With an `events` entry it is also the yardstick for change events: it polls
// one register of a Modbus TCP slave on a fixed-rate timer (one hand-made
// request at a time) and, when the register changed, sends every WebSocket
// client at /ws the device's JSON with the new value. That is the least a
// daemon can do to get an input to a client, with the same scan period.
//
// With a third argument it also polls a read plan (bench/bare-poller.mjs) in
// the same process: the yardstick for a server that polls its buses as it
// serves, as the daemon does.
//
// Usage: node bench/bare-server.mjs <port> <replies.json> [plan.json]
// replies.json: { "<path>": { "headers": { name: value }, "body": "<base64>" }, …,
//   "events"?: { "modbusPort": N, "unit": N, "register": N, "bit": N, "hz": N, "device": {…} } }
import { createServer } from 'node:http';
import { connect } from 'node:net';
import { readFileSync } from 'node:fs';

const [port, repliesFile, planFile] = process.argv.slice(2);
const { events, ...fixed } = JSON.parse(readFileSync(repliesFile, 'utf8'));
const replies = new Map(
  Object.entries(fixed).map(([path, reply]) => [path, { headers: reply.headers, body: Buffer.from(reply.body, 'base64') }]),
);

const server = createServer((req, res) => {
  const reply = replies.get(req.url);
  if (!reply) {
    res.writeHead(404);
    res.end();
    return;
  }
  res.writeHead(200, reply.headers);
  res.end(reply.body);
});
if (events) await serveEvents(server, events);
if (planFile) await (await import('./bare-poller.mjs')).pollPlan(planFile);
server.listen(Number(port), '127.0.0.1', () => process.stdout.write(`listening on ${server.address().port}\n`));
process.on('SIGTERM', () => process.exit(0));

async function serveEvents(http, { modbusPort, unit, register, bit, hz, device }) {
  const { WebSocketServer } = await import('ws');
  const wss = new WebSocketServer({ server: http, path: '/ws', perMessageDeflate: false });
  const socket = connect(modbusPort, '127.0.0.1');
  socket.setNoDelay(true);
  let last;
  let waiting = false;
  let transaction = 0;
  socket.on('data', (reply) => {
    waiting = false;
    // MBAP header (7 bytes), function code, byte count, then the register.
    const value = (reply.readUInt16BE(9) >> bit) & 1;
    if (value === last) return;
    last = value;
    const message = JSON.stringify([{ ...device, value }]);
    for (const client of wss.clients) client.send(message);
  });
  await new Promise((resolve) => socket.once('connect', resolve));
  setInterval(() => {
    if (waiting) return;
    waiting = true;
    transaction = (transaction + 1) & 0xffff;
    const request = Buffer.from([0, 0, 0, 0, 0, 6, unit, 3, register >> 8, register & 0xff, 0, 1]);
    request.writeUInt16BE(transaction, 0);
    socket.write(request);
  }, 1000 / hz);
}
