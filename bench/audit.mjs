// Does the audit log slow the write path down?
//
//   node build.mjs && node bench/audit.mjs
//
// Starts two identical daemons (bench/config.yaml, the service's node
// options), one with the audit log (`audit: {max_mb: 20}`, the default) and
// one without (`max_mb: 0`). Then keeps BENCH_CONNECTIONS keep-alive clients
// writing POST /rest/do/1_01 (alternately 1 and 0) into each, in rounds that
// alternate which daemon goes first, so machine noise hits both alike. Node's
// own HTTP client drives the load (no wrk needed): the figure is the ratio,
// not the absolute rate. Reports each round and the medians.
// Environment: BENCH_DURATION (seconds per run, default 5), BENCH_ROUNDS
// (default 4), BENCH_CONNECTIONS (default 8).
import { Agent, request } from 'node:http';
import { readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BENCH_DIR, fmt, freePort, log, median, positive, serviceNodeOptions, spawnDaemon, stop, tempDir, waitForAnswer } from './common.mjs';

const DURATION_S = positive('BENCH_DURATION', 5);
const ROUNDS = positive('BENCH_ROUNDS', 4);
const CONNECTIONS = positive('BENCH_CONNECTIONS', 8);
const PATH = '/rest/do/1_01';

const start = async (label, maxMb) => {
  const dir = tempDir('iogate-audit-bench-');
  const config = join(dir, 'config.yaml');
  writeFileSync(config, `alias_file: ${join(dir, 'alias.yaml')}\naudit: {max_mb: ${maxMb}}\n${readFileSync(join(BENCH_DIR, 'config.yaml'), 'utf8')}`);
  const port = await freePort();
  const daemon = spawnDaemon(config, port);
  await waitForAnswer(port, PATH, daemon.child);
  return { label, dir, port, child: daemon.child, runs: [] };
};

/** Writes as fast as the daemon answers for `seconds`; returns writes per second. */
async function writeLoad(port, seconds) {
  const agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  const until = performance.now() + seconds * 1000;
  let done = 0;
  let failed = 0;
  const one = (value) =>
    new Promise((resolve) => {
      const body = `value=${value}`;
      const req = request({ port, host: '127.0.0.1', path: PATH, method: 'POST', agent, headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'Content-Length': body.length } }, (res) => {
        res.resume();
        res.on('end', () => {
          if (res.statusCode === 200) done++;
          else failed++;
          resolve();
        });
      });
      req.on('error', () => (failed++, resolve()));
      req.end(body);
    });
  const client = async (index) => {
    for (let value = index % 2; performance.now() < until; value ^= 1) await one(value);
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: CONNECTIONS }, (_, index) => client(index)));
  agent.destroy();
  if (failed > 0) log(`${failed} writes failed`);
  return Math.round(done / ((performance.now() - started) / 1000));
}

const without = await start('without audit log (max_mb: 0)', 0);
const withAudit = await start('with audit log (max_mb: 20)', 20);
for (const daemon of [without, withAudit]) await writeLoad(daemon.port, 1);
log(`${ROUNDS} alternating rounds of ${DURATION_S} s, ${CONNECTIONS} clients`);
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? [without, withAudit] : [withAudit, without];
  for (const daemon of order) {
    const rate = await writeLoad(daemon.port, DURATION_S);
    daemon.runs.push(rate);
    log(`round ${round + 1}, ${daemon.label}: ${rate} writes/s`);
  }
}
await Promise.all([stop(without.child), stop(withAudit.child)]);
const auditBytes = readdirSync(withAudit.dir).filter((name) => name.startsWith('audit')).reduce((sum, name) => sum + statSync(join(withAudit.dir, name)).size, 0);

const rate = (daemon) => median(daemon.runs);
console.log(`\nPOST ${PATH}, ${CONNECTIONS} keep-alive clients, ${DURATION_S} s runs, ${ROUNDS} alternating rounds, node ${serviceNodeOptions().join(' ')}\n`);
console.log('| daemon | writes/s per round | median writes/s |');
console.log('| --- | --- | ---: |');
for (const daemon of [without, withAudit]) console.log(`| ${daemon.label} | ${daemon.runs.join(', ')} | ${fmt(rate(daemon))} |`);
console.log(`\nwith / without, median writes/s: ${fmt(rate(withAudit) / rate(without), 3)}; audit files on disk afterwards: ${fmt(auditBytes / 1024 / 1024, 1)} MB`);
