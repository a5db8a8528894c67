// `npm run bench:modbus-server`: what the Modbus TCP server (apis.modbus_server)
// costs the daemon. The daemon polls an iogate-sim Brain board over Modbus TCP
// at 50 Hz (the simulator is its own process, so its CPU is not counted), and
// serves it on its Modbus TCP server. Phases of --seconds each:
//   idle         polling alone;
//   cached       --clients clients reading FC3 of the polled registers back to
//                back (answered from the poll cache);
//   passthrough  the same clients reading FC1 of the watchdog-reset and
//                NV-save coils (pulses no register mirrors, so always sent on
//                to the board through the bus queue; the output coils are
//                answered from the cache).
// For each: the daemon's CPU (utime + stime), requests answered, CPU per
// request above idle, and the board's scans per second (polling's rate).
//
//   node bench/modbus-server.mjs [--seconds N] [--clients N]
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { cpuSeconds, fmt, freePort, get, spawnDaemon, spawnSim, stop, tempDir } from './common.mjs';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '10' }, clients: { type: 'string', default: '10' } } });
const SECONDS = Number(values.seconds);
const CLIENTS = Number(values.clients);

const sim = await spawnSim([['00', 1]]);
const modbusPort = await freePort();
const httpPort = await freePort();
const dir = tempDir('iogate-bench-mbs-');
const config = join(dir, 'config.yaml');
writeFileSync(
  config,
  [
    `alias_file: ${join(dir, 'alias.yaml')}`,
    'apis:',
    `  modbus_server: {enabled: true, port: ${modbusPort}}`,
    'comm_channels:',
    '  LINE:',
    '    type: MODBUSTCP',
    '    hostname: 127.0.0.1',
    `    port: ${sim.tcpPort}`,
    '    devices:',
    '      1: {model: "00", slave-id: 1, scan_frequency: 50}',
    '',
  ].join('\n'),
);
const daemon = spawnDaemon(config, httpPort);
for (let i = 0; ; i++) {
  if (/Modbus TCP server listening/.test(daemon.output())) break;
  if (i > 300) throw new Error(`the daemon did not start its Modbus TCP server:\n${daemon.output()}`);
  await sleep(100);
}
await sleep(3000);

async function scans() {
  const text = (await get(httpPort, '/metrics')).body.toString('utf8');
  return Number(/^iogate_slave_scans_total\{[^}]*\} (\d+)/m.exec(text)?.[1] ?? NaN);
}

/** One client reading `request` back to back until `until`; returns the replies it got. */
async function client(request, until) {
  const socket = connect({ port: modbusPort, host: '127.0.0.1' });
  await once(socket, 'connect');
  socket.setNoDelay(true);
  let answered = 0;
  let id = 0;
  const frame = () => {
    const header = Buffer.alloc(7);
    header.writeUInt16BE((id = (id % 0xffff) + 1), 0);
    header.writeUInt16BE(request.length + 1, 4);
    header[6] = 1;
    return Buffer.concat([header, request]);
  };
  await new Promise((resolve) => {
    let buffered = Buffer.alloc(0);
    socket.on('data', (chunk) => {
      buffered = Buffer.concat([buffered, chunk]);
      while (buffered.length >= 7 && buffered.length >= 6 + buffered.readUInt16BE(4)) {
        buffered = buffered.subarray(6 + buffered.readUInt16BE(4));
        answered++;
        if (performance.now() >= until) return resolve();
        socket.write(frame());
      }
    });
    socket.write(frame());
  });
  socket.destroy();
  return answered;
}

async function phase(name, request) {
  const cpu0 = cpuSeconds(daemon.child.pid);
  const scans0 = await scans();
  const started = performance.now();
  const until = started + SECONDS * 1000;
  const answered = request ? (await Promise.all(Array.from({ length: CLIENTS }, () => client(request, until)))).reduce((a, b) => a + b, 0) : (await sleep(SECONDS * 1000), 0);
  const elapsed = (performance.now() - started) / 1000;
  const cpu = cpuSeconds(daemon.child.pid) - cpu0;
  return { name, cpuPercent: (100 * cpu) / elapsed, requestsPerS: answered / elapsed, scansPerS: ((await scans()) - scans0) / elapsed, cpu, elapsed, answered };
}

const read = (fc, address, quantity) => Buffer.from([fc, address >> 8, address & 0xff, quantity >> 8, quantity & 0xff]);
const results = [await phase('idle'), await phase('cached', read(3, 0, 2)), await phase('passthrough', read(1, 1002, 2))];
const idle = results[0];
const lines = ['| phase | daemon CPU | requests/s | µs CPU per request (above idle) | scans/s |', '|---|---|---|---|---|'];
for (const r of results) {
  const perRequest = r.answered > 0 ? ((r.cpu - (idle.cpu / idle.elapsed) * r.elapsed) / r.answered) * 1e6 : undefined;
  r.cpuMicrosPerRequest = perRequest;
  lines.push(`| ${r.name} | ${fmt(r.cpuPercent, 1)} % | ${fmt(r.requestsPerS)} | ${perRequest === undefined ? '–' : fmt(perRequest, 1)} | ${fmt(r.scansPerS, 1)} |`);
}
process.stdout.write(`${lines.join('\n')}\n${JSON.stringify({ clients: CLIENTS, seconds: SECONDS, results })}\n`);
await stop(daemon.child);
await stop(sim.child);
