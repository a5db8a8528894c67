import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { BUNDLE } from '../../helpers/spawn-daemon.js';
import { startHttpsDaemon } from '../../helpers/https-daemon.js';
import { SIMULATED_BUS, configFile } from '../../helpers/http-call.js';

// `apis.tls: {self_signed: true}` end to end: the built daemon makes its
// certificate in state_dir, logs its fingerprint, serves HTTPS with it, and
// a restart keeps it; --check-config tells the same fingerprint.

function get(port: number, path: string, ca: Buffer): Promise<{ status: number; fingerprint: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, ca, agent: false }, (res) => {
      const fingerprint = (res.socket as import('node:tls').TLSSocket).getPeerCertificate().fingerprint256;
      res.resume().on('end', () => resolve({ status: res.statusCode!, fingerprint }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('HTTPS with a self-signed certificate', () => {
  test('made once in state_dir, served, fingerprint logged and shown by --check-config, kept over a restart', async () => {
    const { dir, file } = configFile(['state_dir: state', 'apis:', '  tls: {self_signed: true}', SIMULATED_BUS].join('\n'), 'iogate-https-self-');
    const certFile = join(dir, 'state', 'tls', 'self-signed-cert.pem');

    const before = execFileSync(process.execPath, [BUNDLE, '--check-config', '--config', file], { encoding: 'utf8' });
    assert.match(before, /self-signed certificate will be made in .*self-signed-cert\.pem at start \(none was stored yet\)/);

    const first = await startHttpsDaemon(file, dir);
    let fingerprint: string;
    try {
      fingerprint = new X509Certificate(readFileSync(certFile)).fingerprint256;
      assert.match(first.output(), /made a new self-signed certificate \(none was stored yet\)/);
      assert.ok(first.output().includes(`SHA-256 fingerprint ${fingerprint}`), first.output());
      const reply = await get(first.port, '/rest/all', readFileSync(certFile));
      assert.equal(reply.status, 200);
      assert.equal(reply.fingerprint, fingerprint);
    } finally {
      await first.stop();
    }

    const checked = execFileSync(process.execPath, [BUNDLE, '--check-config', '--config', file], { encoding: 'utf8' });
    assert.ok(checked.includes(`SHA-256 fingerprint ${fingerprint}`), checked);
    assert.match(checked, /HTTP {7}https:\/\//);

    const second = await startHttpsDaemon(file, dir);
    try {
      assert.doesNotMatch(second.output(), /made a new self-signed certificate/);
      assert.equal((await get(second.port, '/rest/all', readFileSync(certFile))).fingerprint, fingerprint);
    } finally {
      await second.stop();
    }
  });

  test('--make-certificate makes it ahead of start-up and keeps it the second time; refused without self_signed', () => {
    const { dir, file } = configFile(['state_dir: state', 'apis:', '  tls: {self_signed: true}', SIMULATED_BUS].join('\n'), 'iogate-https-self-');
    const made = execFileSync(process.execPath, [BUNDLE, '--make-certificate', '--config', file], { encoding: 'utf8' });
    const fingerprint = new X509Certificate(readFileSync(join(dir, 'state', 'tls', 'self-signed-cert.pem'))).fingerprint256;
    assert.match(made, /made a new certificate \(none was stored yet\)/);
    assert.ok(made.includes(fingerprint), made);
    const kept = execFileSync(process.execPath, [BUNDLE, '--make-certificate', '--config', file], { encoding: 'utf8' });
    assert.match(kept, /kept the stored certificate/);
    assert.ok(kept.includes(fingerprint), kept);
    const { file: plain } = configFile(SIMULATED_BUS, 'iogate-https-self-');
    assert.throws(() => execFileSync(process.execPath, [BUNDLE, '--make-certificate', '--config', plain], { stdio: 'pipe' }), /does not ask for one/);
  });

  test('self_signed together with cert and key is a configuration error', () => {
    const { file } = configFile(['apis:', '  tls: {self_signed: true, cert: a.pem, key: a.key}', SIMULATED_BUS].join('\n'), 'iogate-https-self-');
    assert.throws(() => execFileSync(process.execPath, [BUNDLE, '--check-config', '--config', file], { encoding: 'utf8', stdio: 'pipe' }), /either self_signed: true or cert and key/);
  });
});
