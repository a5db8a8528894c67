// What handing one change to 100 WebSocket clients costs the sending loop,
// and what writing pre-framed bytes below `ws`'s API would save.
//
//   node bench/ws-fanout.mjs
//
// A `ws` server with 100 clients in a child process; 200 times per variant
// and round, the time one loop takes to send the same ~250-byte device list
// to every client (p50 / p99 in ms, three rounds):
//   - wsSend: ws.send(buffer, { binary: false }, callback), as iogate sends;
//   - wsSendNoCb: the same without the callback;
//   - preframedSocketWrite: the frame built once (ws's Sender.frame) and the
//     same bytes written to each client's socket (`_socket`, not public API).
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:http';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { Sender, WebSocket, WebSocketServer } from 'ws';

const CLIENTS = 100;

if (process.argv[2] === '--clients') {
  for (let i = 0; i < CLIENTS; i++) new WebSocket(process.argv[3], { perMessageDeflate: false }).on('message', () => {});
  setInterval(() => {}, 60_000);
} else {
  const server = createServer();
  const wss = new WebSocketServer({ server, perMessageDeflate: false });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const child = fork(fileURLToPath(import.meta.url), ['--clients', `ws://127.0.0.1:${server.address().port}`]);
  while (wss.clients.size < CLIENTS) await sleep(50);
  const clients = [...wss.clients];
  const payload = Buffer.from(
    JSON.stringify([{ dev: 'di', circuit: '1_01', value: 1, debounce: 50, counter_modes: ['Enabled', 'Disabled'], counter_mode: 'Enabled', counter: 3, mode: 'Simple', modes: ['Simple', 'DirectSwitch'], glob_dev_id: 1 }]),
  );
  const variants = {
    wsSend: () => {
      for (const ws of clients) ws.send(payload, { binary: false }, () => {});
    },
    wsSendNoCb: () => {
      for (const ws of clients) ws.send(payload, { binary: false });
    },
    preframedSocketWrite: () => {
      const frame = Buffer.concat(Sender.frame(payload, { fin: true, rsv1: false, opcode: 1, mask: false, readOnly: true }));
      for (const ws of clients) ws._socket.write(frame);
    },
  };
  const load = loadavg()[0];
  const results = {};
  for (let round = 0; round < 3; round++) {
    for (const [name, send] of Object.entries(variants)) {
      const times = [];
      for (let i = 0; i < 200; i++) {
        await sleep(3);
        const from = performance.now();
        send();
        times.push(performance.now() - from);
      }
      times.sort((a, b) => a - b);
      (results[name] ??= []).push(`${times[100].toFixed(3)} / ${times[198].toFixed(3)}`);
    }
  }
  console.log(`${new Date().toISOString()}, load average ${load.toFixed(2)}: one loop over ${CLIENTS} clients, p50 / p99 ms per round`);
  for (const [name, rounds] of Object.entries(results)) console.log(`${name}: ${rounds.join(', ')}`);
  child.kill();
  process.exit(0);
}
