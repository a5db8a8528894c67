// Modbus master benchmark (run by hand: node bench/modbus.mjs).
//
// Drives iogate's bus engine in a closed loop (one transaction on the wire at
// a time, as the daemon does) against the bundled iogate-sim, over a socat pty
// pair and over Modbus TCP. For every transaction it records the master's own
// turnaround: from the last byte of a reply arriving to the next request being
// written, i.e. framing, CRC, decoding, promise resolution and encoding. The
// wire-time limits at 19200 and 115200 Bd for the same frames are printed
// beside the measured rates, since on real RS485 the baud rate, not the
// master, is the bottleneck.
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tsImport } from 'tsx/esm/api';
import { tempDir } from './common.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const TRANSACTIONS = Number(process.env.BENCH_TRANSACTIONS ?? 5000);
const WARMUP = 300;
// The Brain section's busiest block: 12 holding registers from 8 (DI counters).
const REQUEST = { fc: 3, address: 8, quantity: 12 };
const REQUEST_BYTES = 8; // unit, fc, address, quantity, CRC
const RESPONSE_BYTES = 5 + 2 * REQUEST.quantity; // unit, fc, byte count, data, CRC

const load = (path) => tsImport(join(root, path), import.meta.url);
const { ModbusBus } = await load('src/modbus/bus.ts');
const { SerialLink } = await load('src/transport/serial-link.ts');
const { TcpLink } = await load('src/transport/tcp-link.ts');
const { rtuSilenceMs } = await load('src/modbus/rtu-framer.ts');

execFileSync(process.execPath, ['build.mjs'], { cwd: root, stdio: 'inherit' });

/** Wraps a link to time the master's turnaround; `gap` false drops the RTU t3.5 wait so only the master's own time remains. */
function instrument(link, { gap }) {
  const turnarounds = [];
  let lastReplyByte = 0;
  return {
    turnarounds,
    link: {
      framing: link.framing,
      spec: link.spec,
      silenceMs: gap ? link.silenceMs : 0,
      open: (handlers) =>
        link.open({
          data: (chunk) => {
            lastReplyByte = performance.now();
            handlers.data(chunk);
          },
          closed: handlers.closed,
        }),
      write(frame) {
        if (lastReplyByte) turnarounds.push(performance.now() - lastReplyByte);
        lastReplyByte = 0;
        link.write(frame);
      },
      close: () => link.close(),
    },
  };
}

async function measure(name, rawLink, { gap }) {
  const { link, turnarounds } = instrument(rawLink, { gap });
  const bus = new ModbusBus(link, { name, timeoutMs: 1000, retries: 0 });
  bus.start();
  await bus.whenConnected();
  for (let i = 0; i < WARMUP; i++) await bus.request(1, REQUEST, 'poll');
  turnarounds.length = 0;
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  for (let i = 0; i < TRANSACTIONS; i++) await bus.request(1, REQUEST, 'poll');
  const elapsed = performance.now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  await bus.stop();
  const sorted = turnarounds.slice().sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return {
    name,
    perSecond: (TRANSACTIONS / elapsed) * 1000,
    median: at(0.5),
    p99: at(0.99),
    cpuUs: (cpu.user + cpu.system) / TRANSACTIONS,
  };
}

async function startProcess(command, args, readyPattern) {
  const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let output = '';
  child.stderr.setEncoding('utf8');
  await new Promise((resolve, reject) => {
    child.stderr.on('data', (chunk) => {
      output += chunk;
      if (readyPattern.test(output)) resolve();
    });
    child.once('exit', (code) => reject(new Error(`${command} exited with ${code}: ${output}`)));
  });
  return { child, output: () => output };
}

async function stopProcess({ child }) {
  if (child.exitCode !== null) return;
  child.kill('SIGTERM');
  await once(child, 'exit');
}

function wireLimit(baud) {
  // 8N1: 10 bits per character; a reply follows the request's t3.5, the next request the reply's.
  const charMs = 10_000 / baud;
  const silence = rtuSilenceMs(baud, 10);
  const transactionMs = (REQUEST_BYTES + RESPONSE_BYTES) * charMs + 2 * silence;
  return { transactionMs, perSecond: 1000 / transactionMs };
}

const dir = tempDir('iogate-bench-');
const sim = join(root, 'dist/iogate-sim.js');
const results = [];

const socat = await startProcess(
  'socat',
  ['-d', '-d', `pty,raw,echo=0,link=${join(dir, 'sim')}`, `pty,raw,echo=0,link=${join(dir, 'master')}`],
  /starting data transfer loop/,
);
const rtuSim = await startProcess(process.execPath, [sim, '--model', '00', '--slave-id', '1', '--rtu', join(dir, 'sim')], /^serving /m);
const serial = () => new SerialLink({ path: join(dir, 'master'), baudrate: 19200, parity: 'N', stopbits: 1 });
results.push(await measure('pty, RTU, t3.5 gap enforced (19200 8N1 timing)', serial(), { gap: true }));
results.push(await measure('pty, RTU, no inter-frame gap', serial(), { gap: false }));
await stopProcess(rtuSim);
await stopProcess(socat);

const tcpSim = await startProcess(process.execPath, [sim, '--model', '00', '--slave-id', '1', '--tcp', '127.0.0.1:0'], /^serving .* on tcp \S+:\d+/m);
const port = Number(/on tcp \S+:(\d+)/.exec(tcpSim.output())[1]);
results.push(await measure('TCP loopback', new TcpLink('127.0.0.1', port), { gap: false }));
await stopProcess(tcpSim);

const fmt = (value, digits = 3) => value.toFixed(digits);
console.log(`\nFC3 read of ${REQUEST.quantity} registers (request ${REQUEST_BYTES} B, reply ${RESPONSE_BYTES} B), ${TRANSACTIONS} transactions per row, Node ${process.version}\n`);
console.log('| Link | transactions/s | master turnaround median (ms) | p99 (ms) | master CPU per transaction (µs) |');
console.log('|---|---:|---:|---:|---:|');
for (const r of results) console.log(`| ${r.name} | ${fmt(r.perSecond, 0)} | ${fmt(r.median)} | ${fmt(r.p99)} | ${fmt(r.cpuUs, 1)} |`);
for (const baud of [19200, 115200]) {
  const { transactionMs, perSecond } = wireLimit(baud);
  console.log(`| RS485 wire limit at ${baud} Bd 8N1 (frames + 2 × t3.5) | ${fmt(perSecond, 0)} | (${fmt(transactionMs, 2)} ms on the wire) | | |`);
}
console.log('\nTarget: master turnaround ≤ 0.3 ms median.');
