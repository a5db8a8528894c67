import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { BUNDLE } from '../helpers/spawn-daemon.js';
import { SIMULATED_BUS, configFile } from '../helpers/http-call.js';
import { nginxMissing, startNginx } from '../helpers/nginx.js';
import { endWithThisProcess } from '../helpers/orphan-guard.mjs';

// iogate's HTTPS port with a self-signed certificate, judged by tools that are
// not Node: openssl reads and verifies the generated certificate, sslscan
// (Debian) lists protocols and ciphers, curl trusts the certificate with
// --cacert for a read and a token-bearing write. TLS 1.2 renegotiation is
// tried and must be refused, the port serving on. nginx proxies to the TLS
// port (proxy_pass https://) and verifies the certificate by its file.

const run = promisify(execFile);
const TOKEN = 'interop-tls-token-0123456789abcdef';

describe('HTTPS against openssl, sslscan and curl', () => {
  let child: ChildProcess;
  let port = 0;
  let certFile = '';

  before(async () => {
    const { dir, file } = configFile(
      ['state_dir: state', 'apis:', '  tls: {self_signed: true}', '  auth:', '    tokens:', `      - {name: interop, token: ${TOKEN}, scope: write}`, SIMULATED_BUS].join('\n'),
      'iogate-tls-interop-',
    );
    certFile = join(dir, 'state', 'tls', 'self-signed-cert.pem');
    child = endWithThisProcess(spawn(process.execPath, [BUNDLE, '--config', file, '--port', '0'], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] }));
    let output = '';
    child.stderr!.setEncoding('utf8');
    port = await new Promise<number>((resolve, reject) => {
      child.stderr!.on('data', (chunk: string) => {
        output += chunk;
        const match = /listening on https:\/\/127\.0\.0\.1:(\d+)/.exec(output);
        if (match) resolve(Number(match[1]));
      });
      child.once('exit', () => reject(new Error(`daemon exited:\n${output}`)));
    });
  });

  after(async () => {
    if (child.exitCode === null) {
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
  });

  test('openssl reads the generated certificate as a v3 server leaf and verifies it', async () => {
    const { stdout } = await run('openssl', ['x509', '-in', certFile, '-noout', '-text']);
    assert.match(stdout, /Version: 3 \(0x2\)/);
    assert.match(stdout, /Basic Constraints: critical\s+CA:FALSE/);
    assert.match(stdout, /Key Usage: critical\s+Digital Signature/);
    assert.match(stdout, /Extended Key Usage:\s+TLS Web Server Authentication/);
    assert.match(stdout, /DNS:localhost.*IP Address:127\.0\.0\.1/s);
    const verified = await run('openssl', ['verify', '-CAfile', certFile, certFile]);
    assert.match(verified.stdout, /: OK/);
  });

  test('sslscan: TLS 1.2 and 1.3 only, forward-secret AEAD ciphers only, no renegotiation', async () => {
    const { stdout } = await run('sslscan', ['--no-colour', `127.0.0.1:${port}`], { timeout: 120_000 });
    for (const old of ['SSLv2', 'SSLv3', 'TLSv1.0', 'TLSv1.1']) assert.match(stdout, new RegExp(`${old.replace('.', '\\.')}\\s+disabled`), stdout);
    assert.match(stdout, /TLSv1\.2\s+enabled/);
    assert.match(stdout, /Session renegotiation not supported/);
    const ciphers = [...stdout.matchAll(/^(?:Preferred|Accepted)\s+TLSv\S+\s+\d+ bits\s+(\S+)/gm)].map((match) => match[1]!);
    assert.ok(ciphers.length > 0, stdout);
    for (const cipher of ciphers) {
      assert.doesNotMatch(cipher, /NULL|RC4|DES|EXP|MD5|CBC|-SHA$|ADH|AECDH|PSK/, `weak cipher accepted: ${cipher}`);
      assert.match(cipher, /GCM|CHACHA20/, `not an AEAD cipher: ${cipher}`);
    }
  });

  test('curl --cacert: a read, and a write with a token', async () => {
    const base = `https://localhost:${port}`;
    const read = await run('curl', ['-sS', '--cacert', certFile, `${base}/rest/do/1_01`]);
    assert.equal(JSON.parse(read.stdout).dev, 'do');
    const write = await run('curl', ['-sS', '--cacert', certFile, '-H', `Authorization: Bearer ${TOKEN}`, '-d', 'value=1', `${base}/rest/do/1_01`]);
    assert.equal(JSON.parse(write.stdout).success, true, write.stdout);
    const after = await run('curl', ['-sS', '--cacert', certFile, `${base}/rest/do/1_01`]);
    assert.equal(JSON.parse(after.stdout).value, 1);
    // Without the certificate to trust, curl refuses the connection.
    await assert.rejects(run('curl', ['-sS', `${base}/rest/do/1_01`]), /certificate/);
  });

  test('a TLS 1.2 renegotiation is refused, and the port serves on', async () => {
    const socket = connect({ host: '127.0.0.1', port, maxVersion: 'TLSv1.2', ca: readFileSync(certFile), servername: 'localhost' });
    await once(socket, 'secureConnect');
    socket.on('error', () => {});
    const result = await new Promise<Error | null>((resolve) => {
      const started = socket.renegotiate({}, (error) => resolve(error ?? null));
      if (!started) resolve(new Error('not started'));
      socket.once('close', () => resolve(new Error('closed')));
    });
    assert.ok(result instanceof Error, 'renegotiation must not succeed');
    socket.destroy();
    const again = await run('curl', ['-sS', '--cacert', certFile, `https://localhost:${port}/rest/do/1_01`]);
    assert.equal(JSON.parse(again.stdout).dev, 'do');
  });

  test('nginx in front, proxy_pass https:// with the certificate verified: reads and a token write pass', { skip: nginxMissing() }, async (t) => {
    const nginx = await startNginx(
      (listen) => `server {
	listen 127.0.0.1:${listen};
	location / {
		proxy_pass https://127.0.0.1:${port};
		proxy_ssl_verify on;
		proxy_ssl_trusted_certificate ${certFile};
		proxy_ssl_name localhost;
		proxy_ssl_server_name on;
		proxy_http_version 1.1;
	}
}
`,
    );
    t.after(() => nginx.stop());
    const read = await run('curl', ['-sS', `${nginx.baseUrl}/rest/do/1_01`]);
    assert.equal(JSON.parse(read.stdout).dev, 'do', `${read.stdout}\n${nginx.errors()}`);
    // nginx reaches iogate from loopback, so the token counts as local whatever the browser's link was.
    const write = await run('curl', ['-sS', '-H', `Authorization: Bearer ${TOKEN}`, '-d', 'value=0', `${nginx.baseUrl}/rest/do/1_01`]);
    assert.equal(JSON.parse(write.stdout).success, true, write.stdout);
  });
});
