import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { test } from 'node:test';
import { startHttpsDaemon } from '../../helpers/https-daemon.js';
import { SIMULATED_BUS, configFile } from '../../helpers/http-call.js';
import { tlsAttack } from '../../fuzz/tls-attack.js';
import { Random } from '../../fuzz/random.js';
import type { Counters } from '../../fuzz/common.js';

// A short run of the fuzzer's TLS attack (test/fuzz/tls-attack.ts) against
// the built daemon with a self-signed certificate: garbage and truncated
// handshakes, dripped ClientHellos, renegotiation attempts. A client polling
// over HTTPS all along must be answered every time, no renegotiation may
// succeed, and the daemon must still be running at the end.

const ATTACK_MS = 6000;

test('hostile TLS handshakes leave the daemon up and serving', async (t) => {
  const { dir, file } = configFile(['state_dir: state', 'apis:', '  tls: {self_signed: true}', SIMULATED_BUS].join('\n'), 'iogate-https-hostile-');
  const daemon = await startHttpsDaemon(file, dir);
  const { child, port } = daemon;
  t.after(() => daemon.stop());
  const ca = readFileSync(join(dir, 'state', 'tls', 'self-signed-cert.pem'));
  const poll = () =>
    new Promise<number>((resolve) => {
      const req = request({ host: '127.0.0.1', port, path: '/rest/do/1_01', ca, servername: 'localhost', agent: false, timeout: 5000 }, (res) => {
        res.resume().on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('timeout', () => req.destroy());
      req.on('error', () => resolve(0));
      req.end();
    });

  const counts: Counters = {};
  let stopped = false;
  const attack = tlsAttack({ port, stopped: () => stopped, counts }, new Random(Number(process.env['FUZZ_SEED'] ?? 45)), 6);
  const until = Date.now() + ATTACK_MS;
  let polled = 0;
  let answered = 0;
  while (Date.now() < until) {
    polled++;
    if ((await poll()) === 200) answered++;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  stopped = true;
  await attack;
  t.diagnostic(`attack: ${JSON.stringify(counts)}; supervisor ${answered}/${polled}`);
  assert.equal(answered, polled, `every HTTPS poll answered (${answered}/${polled})`);
  assert.equal(counts['tls.renegotiation_renegotiated'] ?? 0, 0, 'no renegotiation succeeded');
  assert.ok((counts['tls.renegotiation_refused'] ?? 0) > 0, 'renegotiation was tried');
  assert.ok((counts['tls.garbage'] ?? 0) > 0 && (counts['tls.truncated'] ?? 0) > 0);
  assert.equal(counts['tls.fuzzer_errors'] ?? 0, 0);
  assert.equal(child.exitCode, null, 'the daemon is still running');
  assert.equal(await poll(), 200);
});
