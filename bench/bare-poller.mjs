// The yardstick for idle cost: the least a Node process does to make the
// daemon's Modbus reads. It takes the daemon's own read plan (`iogate
// --read-plan`, the requests of each scan of each slave) and makes exactly
// those requests over Modbus TCP, at the same scan periods: one socket per
// bus and one transaction on it at a time, one timer per scan period on a
// fixed-rate grid (as the daemon's: an interval timer drifts a few per cent
// under the rate on a busy machine), the request frames built once, and a
// reply kept only when it differs from the last one of that read. No daemon
// around it: no devices, no API, no counters.
//
// Usage: node bench/bare-poller.mjs <plan.json>
// plan.json: { "buses": [{ "port": N, "slaves": [{ "unit": N, "periodMs": N,
//   "scans": [[{ "fc", "address", "quantity" }, …], …], "input"?: { "periodMs", "requests": […] } }] }] }
// bench/bare-server.mjs imports pollPlan() to poll and serve in one process.
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';

class Read {
  constructor(unit, { fc, address, quantity }) {
    // MBAP header (transaction id written per send) and the read PDU.
    this.frame = Buffer.from([0, 0, 0, 0, 0, 6, unit, fc, address >> 8, address & 0xff, quantity >> 8, quantity & 0xff]);
    this.last = Buffer.alloc(2 * quantity);
  }

  /** Keeps the reply's registers when they changed. */
  take(reply, start) {
    const from = start + 9;
    if (reply.compare(this.last, 0, this.last.length, from, from + this.last.length) !== 0) reply.copy(this.last, 0, from, from + this.last.length);
  }
}

const grids = new Map();

/** Calls `callback` every `periodMs` on a fixed-rate grid shared by all callbacks of that period. */
function onGrid(periodMs, callback) {
  let callbacks = grids.get(periodMs);
  if (callbacks) return void callbacks.push(callback);
  grids.set(periodMs, (callbacks = [callback]));
  const origin = performance.now();
  let slot = 0;
  let delay = -1;
  let timer;
  const arm = () => {
    const now = performance.now();
    let due = origin + ++slot * periodMs;
    // Slots already past are skipped, as the daemon does.
    if (now > due) {
      slot += Math.floor((now - due) / periodMs);
      due = origin + slot * periodMs;
    }
    if (timer && Math.abs(due - now - delay) <= 1) {
      timer.refresh();
    } else {
      clearTimeout(timer);
      delay = Math.max(1, Math.round(due - now));
      timer = setTimeout(fire, delay);
    }
  };
  const fire = () => {
    arm();
    for (const callback of callbacks) callback();
  };
  arm();
}

async function pollBus({ port, slaves }) {
  const socket = connect(port, '127.0.0.1');
  socket.setNoDelay(true);
  socket.on('error', (error) => {
    process.stderr.write(`bare-poller: bus on port ${port}: ${error.message}\n`);
    process.exit(1);
  });
  await new Promise((resolve) => socket.once('connect', resolve));
  const waiting = [];
  let current;
  let transaction = 0;
  let pending = Buffer.alloc(0);
  const sendNext = () => {
    current = waiting.shift();
    if (!current) return;
    transaction = (transaction + 1) & 0xffff;
    current.read.frame.writeUInt16BE(transaction, 0);
    socket.write(current.read.frame);
  };
  socket.on('data', (chunk) => {
    let data = pending.length ? Buffer.concat([pending, chunk]) : chunk;
    let start = 0;
    while (data.length - start >= 6) {
      const length = 6 + data.readUInt16BE(start + 4);
      if (data.length - start < length) break;
      if (current && data.readUInt16BE(start) === transaction) {
        current.read.take(data, start);
        const { scan } = current;
        current = undefined;
        if (--scan.left === 0) scan.busy = false;
        sendNext();
      }
      start += length;
    }
    pending = start < data.length ? data.subarray(start) : Buffer.alloc(0);
  });
  for (const slave of slaves) {
    if (slave.periodMs > 0) {
      const scan = { busy: false, left: 0 };
      const cycle = slave.scans.map((requests) => requests.map((request) => ({ read: new Read(slave.unit, request), scan })));
      let number = 0;
      onGrid(slave.periodMs, () => {
        // A scan still on the line when its next slot comes: that slot is skipped.
        if (scan.busy) return;
        const reads = cycle[number++ % cycle.length];
        scan.busy = true;
        scan.left = reads.length;
        for (const entry of reads) waiting.push(entry);
        if (!current) sendNext();
      });
    }
    if (slave.input) {
      const scan = { busy: false, left: 0 };
      const reads = slave.input.requests.map((request) => ({ read: new Read(slave.unit, request), scan }));
      onGrid(slave.input.periodMs, () => {
        if (scan.busy) return;
        scan.busy = true;
        scan.left = reads.length;
        // Input reads go ahead of the scans' reads, as in the daemon.
        waiting.unshift(...reads);
        if (!current) sendNext();
      });
    }
  }
}

/** Starts polling the plan in `planFile`; resolves once every bus is connected. */
export async function pollPlan(planFile) {
  const { buses } = JSON.parse(readFileSync(planFile, 'utf8'));
  await Promise.all(buses.map(pollBus));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await pollPlan(process.argv[2]);
  process.stdout.write('polling\n');
  process.on('SIGTERM', () => process.exit(0));
}
